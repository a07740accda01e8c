# fish completion for catty-ctx (generated; do not edit)
complete -c catty-ctx -f
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -l version -d 'Print the version and exit'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a append -d 'Append events read from stdin (JSON Lines: kind + fields, or'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a blob -d 'Print the payload a large message or tool output was moved t'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a completion -d 'Print the completion script for SHELL (the same file as comp'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a fork -d 'Copy the events of turns 1..N (keeping their seq), the segme'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a inspect -d 'Counts, turns, estimated tokens against the window, largest '
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a instructions -d 'Find instruction files (AGENTS.md and rules) for DIR, in pro'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a repair -d 'Fix a torn last line and invalid lines (moved to quarantine/'
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a resume -d 'Print the session\'s view with every repair applied (the log '
complete -c catty-ctx -n 'not __fish_seen_subcommand_from append blob completion fork inspect instructions repair resume segment' -a segment -d 'Read the segments archive: the verbatim record of compacted '
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l create -d 'Make the session (summary.json and its session event) if it '
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l window -r -F -d 'Context window in tokens, with --create.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l model -r -F -d 'Model name, with --create.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l cwd -r -F -d 'Working directory recorded, with --create.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l session-id -r -F -d 'Session id, with --create (default: a new UUID).'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l lock-timeout -r -F -d 'Wait this long for the session lock, then exit 75.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l quiet -s q -d 'Do not echo the appended events.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l max-user-bytes -r -F -d 'A user message longer than N bytes moves to blobs/ with its '
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -l max-tool-bytes -r -F -d 'A tool output longer than N bytes moves to blobs/ with its h'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from append' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from blob' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from blob' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from completion' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from completion' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from fork' -l at-turn -r -F -d 'Keep turns 1..N (default: all).'
complete -c catty-ctx -n '__fish_seen_subcommand_from fork' -l model -r -F -d 'The child\'s model.'
complete -c catty-ctx -n '__fish_seen_subcommand_from fork' -l cwd -r -F -d 'The child\'s working directory.'
complete -c catty-ctx -n '__fish_seen_subcommand_from fork' -l dry-run -d 'Show what would be done; write nothing.'
complete -c catty-ctx -n '__fish_seen_subcommand_from fork' -l json -d 'Print one JSON document (a terminal gets tables, a pipe JSON'
complete -c catty-ctx -n '__fish_seen_subcommand_from fork' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from fork' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -l items -d 'List the view\'s items with their tokens and cumulative finge'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -l seq -r -F -d 'Print the event with this seq in full.'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -l context -d 'The prompt-context snapshot: every part with its source; unk'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -l json -d 'Print one JSON document (a terminal gets tables, a pipe JSON'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from inspect' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from instructions' -l append -r -F -d 'Record them as the session\'s instructions state (nothing is '
complete -c catty-ctx -n '__fish_seen_subcommand_from instructions' -l no-global -d 'Leave out the user-level files.'
complete -c catty-ctx -n '__fish_seen_subcommand_from instructions' -l json -d 'Print one JSON document (a terminal gets tables, a pipe JSON'
complete -c catty-ctx -n '__fish_seen_subcommand_from instructions' -l lock-timeout -r -F -d 'Wait this long for the session lock, then exit 75.'
complete -c catty-ctx -n '__fish_seen_subcommand_from instructions' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from instructions' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from repair' -l check -d 'Only report what is wrong; exit 1 when anything is found, 0 '
complete -c catty-ctx -n '__fish_seen_subcommand_from repair' -l dry-run -d 'Show what would be done; write nothing.'
complete -c catty-ctx -n '__fish_seen_subcommand_from repair' -l json -d 'Print one JSON document (a terminal gets tables, a pipe JSON'
complete -c catty-ctx -n '__fish_seen_subcommand_from repair' -l lock-timeout -r -F -d 'Wait this long for the session lock, then exit 75.'
complete -c catty-ctx -n '__fish_seen_subcommand_from repair' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from repair' -F
complete -c catty-ctx -n '__fish_seen_subcommand_from resume' -l format -s f -r -F -d 'items (JSON Lines), openai ({"messages": [...]}) or anthropi'
complete -c catty-ctx -n '__fish_seen_subcommand_from resume' -s h -l help -d 'Show the help and exit.'
complete -c catty-ctx -n '__fish_seen_subcommand_from resume' -F
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
