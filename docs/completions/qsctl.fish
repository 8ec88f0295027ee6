# fish completion for qsctl. Paths and method names come from the running daemon
# (qsctl get --keys, qsctl describe).

set -l commands get watch call describe status help

function __qsctl_query
    set -l tokens (commandline -opc)
    set -l sock
    for i in (seq (count $tokens))
        switch $tokens[$i]
            case -s --socket
                set sock --socket $tokens[(math $i + 1)]
            case '--socket=*'
                set sock $tokens[$i]
        end
    end
    qsctl $sock --timeout 2 $argv 2>/dev/null
end

function __qsctl_paths
    # Candidates keep the form being typed: "/debug/x" or "debug/x" (the leading '/' is optional).
    set -l cur (commandline -ct)
    set -l typed ''
    if string match -q '*/*' -- $cur
        set typed (string replace -r '/[^/]*$' '' -- $cur)
    end
    set -l query $typed
    string match -q '/*' -- $query; or set query /$query
    for key in (__qsctl_query get --keys $query)
        set key (string replace -a '~' '~0' -- $key)
        set key (string replace -a '/' '~1' -- $key)
        if test -z "$typed"; and test -n "$cur"; and not string match -q '/*' -- $cur
            echo $key
        else
            echo $typed/$key
        end
    end
end

function __qsctl_methods
    __qsctl_query describe | awk '/^Methods:/ {m = 1; next} /^$/ {m = 0} m {name = $1; $1 = ""; sub(/^ +/, ""); print name "\t" $0}'
end

function __qsctl_method_keys
    set -l tokens (commandline -opc)
    set -l method
    set -l seen_call 0
    for t in $tokens[2..-1]
        if string match -q -- '-*' $t
            continue
        end
        if test $seen_call = 1
            set method $t
            break
        end
        test "$t" = call; and set seen_call 1
    end
    test -n "$method"; or return
    __qsctl_query describe $method | sed -n 's/^Usage: qsctl call [^ ]*//p' | tr -d '[]' | tr ' ' '\n' | sed -n 's/=VALUE$/=/p'
end

function __qsctl_call_needs_method
    set -l tokens (commandline -opc)
    set -l n 0
    for t in $tokens[2..-1]
        string match -q -- '-*' $t; and continue
        set n (math $n + 1)
    end
    test $n -eq 1
end

complete -c qsctl -f
complete -c qsctl -n "not __fish_seen_subcommand_from $commands" -a get -d 'Print the value at PATH'
complete -c qsctl -n "not __fish_seen_subcommand_from $commands" -a watch -d 'Print the value, then one line per change'
complete -c qsctl -n "not __fish_seen_subcommand_from $commands" -a call -d 'Call a method'
complete -c qsctl -n "not __fish_seen_subcommand_from $commands" -a describe -d 'Describe the methods'
complete -c qsctl -n "not __fish_seen_subcommand_from $commands" -a status -d 'Show the daemon and its backends'
complete -c qsctl -n "not __fish_seen_subcommand_from $commands" -a help -d 'Print help'

complete -c qsctl -s s -l socket -r -F -d 'Socket of qsd'
complete -c qsctl -s t -l timeout -x -d 'Seconds to wait for an answer'
complete -c qsctl -s h -l help -d 'Print help and exit'
complete -c qsctl -l version -d 'Print the version and exit'

complete -c qsctl -n '__fish_seen_subcommand_from get watch call' -s r -l raw -d 'Bare strings, one-line objects'
complete -c qsctl -n '__fish_seen_subcommand_from get call' -s c -l compact -d 'JSON on one line'
complete -c qsctl -n '__fish_seen_subcommand_from get' -s k -l keys -d 'Member names, one per line'
complete -c qsctl -n '__fish_seen_subcommand_from describe status' -s j -l json -d 'Print JSON'
complete -c qsctl -n '__fish_seen_subcommand_from watch' -s p -l patch -d 'Print raw change batches'
complete -c qsctl -n '__fish_seen_subcommand_from watch' -s R -l reconnect -d 'Survive a daemon restart'
complete -c qsctl -n '__fish_seen_subcommand_from watch' -s n -l count -x -d 'Exit after N lines'
complete -c qsctl -n '__fish_seen_subcommand_from watch' -l throttle -x -d 'At most one update per MS milliseconds'
complete -c qsctl -n '__fish_seen_subcommand_from watch' -l jq -x -d 'Print what a jq filter makes of each value'
complete -c qsctl -n '__fish_seen_subcommand_from watch' -l restart-grace -x -d 'Keep the last value while a restarted backend starts (ms)'
complete -c qsctl -n '__fish_seen_subcommand_from watch' -l outlive-parent -d 'Keep running when the parent exits'
complete -c qsctl -n '__fish_seen_subcommand_from call' -l params -x -d 'Params as JSON (- reads stdin)'

complete -c qsctl -n '__fish_seen_subcommand_from get watch' -a '(__qsctl_paths)'
complete -c qsctl -n '__fish_seen_subcommand_from describe' -a '(__qsctl_methods)'
complete -c qsctl -n '__fish_seen_subcommand_from call; and __qsctl_call_needs_method' -a '(__qsctl_methods)'
complete -c qsctl -n '__fish_seen_subcommand_from call; and not __qsctl_call_needs_method' -a '(__qsctl_method_keys)'
