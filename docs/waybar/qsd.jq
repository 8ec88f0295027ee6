# Waybar custom modules fed by qsd: each function turns the value of one path of qsd's tree into
# the object a module with "return-type": "json" reads, {text, tooltip, class, percentage}.
# An empty text hides the module. Used as
#   qsctl watch --reconnect --jq 'include "qsd" {search: "~/.config/waybar"}; battery' /power/displayDevice

# /power/displayDevice: the batteries, as UPower sums them up. UPower has one on every machine:
# without a battery it is not present (type "unknown", percentage 0), and the module hides.
def battery:
  if . == null or .isPresent != true then {text: ""}
  else (.percentage * 100 | round) as $p
    | {text: "\($p)%",
       percentage: $p,
       tooltip: (if .timeToEmpty > 0 then "\(.timeToEmpty / 60 | round) min left"
                 elif .timeToFull > 0 then "\(.timeToFull / 60 | round) min until full"
                 else .state end),
       class: (if .state == "charging" or .state == "fullyCharged" then "charging"
               elif $p <= 15 then "critical"
               elif $p <= 30 then "low"
               else "normal" end)}
  end;

# /audio: the volume of the default output. Its key is in defaultAudioSink (null without one).
def volume:
  .nodes[.defaultAudioSink // ""] as $sink
  | if $sink.audio == null then {text: ""}
    else ($sink.audio.volume * 100 | round) as $v
      | {text: (if $sink.audio.muted then "muted" else "\($v)%" end),
         percentage: $v,
         tooltip: ($sink.description // $sink.name),
         class: (if $sink.audio.muted then "muted" else "unmuted" end)}
    end;

# /network: a wired link if one is up, else the Wi-Fi network and its signal.
def network:
  [.devices[]? | select(.connected)] as $up
  | ([$up[] | select(.type == "wired")] | first) as $wired
  | ([$up[] | select(.type == "wifi")] | first) as $wifi
  | ([$wifi.networks[]? | select(.connected)] | first) as $net
  | if $wired then {text: "wired", class: "wired", tooltip: $wired.name}
    elif $net then ($net.signalStrength * 100 | round) as $s
      | {text: "\($net.name) \($s)%", percentage: $s, class: "wifi", tooltip: "\($wifi.name): \($net.name)"}
    elif .available then {text: "offline", class: "disconnected"}
    else {text: ""}
    end;

# /media: the active player's title and artist, its state as class and icon (nothing without one).
def media:
  .players[.active // ""] as $p
  | if $p == null then {text: ""}
    else ([$p.metadata.title, ($p.metadata.artists | join(", "))] | map(select(. != null and . != "")) | join(" — ")) as $t
      | {text: (if $t == "" then ($p.identity // .active) else $t end),
         tooltip: "\($p.identity // .active): \($p.playbackStatus)",
         class: $p.playbackStatus,
         alt: $p.playbackStatus}
    end;
