# fish completion for catty-ctx (generated; do not edit)
complete -c catty-ctx -f
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append completion inspect segment' -l version -d 'Print the version and exit'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append completion inspect segment' -a append -d 'Append events read from stdin (JSON Lines: kind + fields, or'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append completion inspect segment' -a completion -d 'Print the completion script for SHELL (the same file as comp'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append completion inspect segment' -a inspect -d 'Counts, turns, estimated tokens against the window, largest '
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append completion inspect segment' -a segment -d 'Read the segments archive: the verbatim record of compacted '
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l create -d 'Make the session (summary.json and its session event) if it '
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l window -r -F -d 'Context window in tokens, with --create.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l model -r -F -d 'Model name, with --create.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l cwd -r -F -d 'Working directory recorded, with --create.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l session-id -r -F -d 'Session id, with --create (default: a new UUID).'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l lock-timeout -r -F -d 'Wait this long for the session lock, then exit 75.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l quiet -s q -d 'Do not echo the appended events.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from completion' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from completion' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -l items -d 'List the view\'s items with their tokens and cumulative finge'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -l seq -r -F -d 'Print the event with this seq in full.'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -l json -d 'Print one JSON document (a terminal gets tables, a pipe JSON'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from segment' -a grep -d 'Find TEXT in every segment; each match with its segment, seq'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment' -a list -d 'List the segments with their seq range, turns, size and keyw'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment' -a show -d 'Print segment N in full.'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from grep' -s i -l ignore-case -d 'Ignore case.'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from grep' -s E -l regex -d 'TEXT is a regular expression.'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from grep' -l json -d 'Print one JSON document (a terminal gets tables, a pipe JSON'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from grep' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from grep' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from list' -l json -d 'Print one JSON document (a terminal gets tables, a pipe JSON'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from list' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from list' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from show' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from segment && __fish_seen_subcommand_from show' -F
