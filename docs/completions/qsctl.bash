# bash completion for qsctl. Paths and method names come from the running daemon
# (qsctl get --keys, qsctl describe); without a daemon only commands and options complete.

_qsctl_socket_args() {
    # Re-use a --socket given on the command line for the completion queries.
    local i
    for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
        case ${COMP_WORDS[i]} in
            -s|--socket) printf '%s\n' --socket "${COMP_WORDS[i+1]}"; return ;;
            --socket=*) printf '%s\n' "${COMP_WORDS[i]}"; return ;;
        esac
    done
}

_qsctl_paths() {
    # Candidates keep the form being typed: "/debug/x" or "debug/x" (the leading '/' is optional).
    local cur=$1 typed="" query key
    local -a sock
    mapfile -t sock < <(_qsctl_socket_args)
    [[ $cur == */* ]] && typed=${cur%/*}
    query=$typed
    [[ $query != /* ]] && query=/$query
    while IFS= read -r key; do
        key=${key//\~/\~0}
        key=${key//\//\~1}
        if [[ -z $typed && -n $cur && $cur != /* ]]; then
            printf '%s\n' "$key"
        else
            printf '%s\n' "${typed}/${key}"
        fi
    done < <(qsctl "${sock[@]}" --timeout 2 get --keys "$query" 2>/dev/null)
}

_qsctl_methods() {
    local -a sock
    mapfile -t sock < <(_qsctl_socket_args)
    qsctl "${sock[@]}" --timeout 2 describe 2>/dev/null | awk '/^Methods:/ {m = 1; next} /^$/ {m = 0} m {print $1}'
}

_qsctl_method_keys() {
    local -a sock
    mapfile -t sock < <(_qsctl_socket_args)
    qsctl "${sock[@]}" --timeout 2 describe "$1" 2>/dev/null |
        sed -n 's/^Usage: qsctl call [^ ]*//p' | tr -d '[]' | tr ' ' '\n' | sed -n 's/=VALUE$/=/p'
}

_qsctl() {
    local cur prev words cword
    _init_completion -n =: 2>/dev/null || {
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    }
    local commands="get watch call describe status help"
    local global="-s --socket -t --timeout -h --help --version"

    case $prev in
        -s|--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        -t|--timeout|-n|--count|--throttle|--params|--jq|--restart-grace) return ;;
    esac

    local verb="" i nargs=0 method=""
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            -s|--socket|-t|--timeout|-n|--count|--throttle|--params|--jq|--restart-grace) ((i++)) ;;
            -*) ;;
            *) if [[ -z $verb ]]; then verb=${words[i]}; else ((nargs++)); [[ $nargs == 1 ]] && method=${words[i]}; fi ;;
        esac
    done

    if [[ $cur == -* ]]; then
        local opts=$global
        case $verb in
            get) opts+=" -r --raw -c --compact -k --keys" ;;
            watch) opts+=" -r --raw -p --patch -R --reconnect -n --count --throttle --jq --restart-grace --outlive-parent" ;;
            call) opts+=" -r --raw -c --compact --params" ;;
            describe|status) opts+=" -j --json" ;;
        esac
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi

    case $verb in
        "") COMPREPLY=($(compgen -W "$commands" -- "$cur")) ;;
        get|watch)
            [[ $verb == get && $nargs -ge 1 ]] && return
            compopt -o nospace 2>/dev/null
            COMPREPLY=($(compgen -W "$(_qsctl_paths "$cur")" -- "$cur"))
            ;;
        describe)
            [[ $nargs -ge 1 ]] && return
            COMPREPLY=($(compgen -W "$(_qsctl_methods)" -- "$cur"))
            ;;
        call)
            if [[ $nargs -eq 0 ]]; then
                COMPREPLY=($(compgen -W "$(_qsctl_methods)" -- "$cur"))
            else
                compopt -o nospace 2>/dev/null
                COMPREPLY=($(compgen -W "$(_qsctl_method_keys "$method")" -- "$cur"))
            fi
            ;;
    esac
}
complete -F _qsctl qsctl
