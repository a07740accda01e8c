# bash completion for catty-ctx (generated; do not edit)
_catty_ctx() {
    local cur prev path="" npos=0 w i
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    local groups=" hook hook claude hook codex segment "
    local valued=" --agent --anthropic-upstream --append --at-turn --by --clear-at-least --codex-home --command --compactions --connect-timeout --cwd --deadline --detail --exclude-tools --facts --format --high --image-high --image-low --jobs --judge --keep --keep-turns --limit --listen --lock-timeout --low --max-body-bytes --max-bytes --max-response-bytes --max-tool-bytes --max-user-bytes --min-percent --min-recall --min-summary-chars --mirrors --mode --model --omit-age --openai-upstream --out --output --prefire-wait --previous --prices --print-env --project --prune --replay --retries --root --scheduler --scope --seq --session --session-id --session-ref --settings --since --strategy --summarizer --threshold --timeout --timezone --to --trim-head --trim-over --trim-tail --until --window -f -j -n -o "
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        if [[ "$w" == -* ]]; then
            [[ "$valued" == *" $w "* ]] && ((i++))
            continue
        fi
        if [[ -z "$path" ]]; then path="$w"
        elif [[ "$groups" == *" $path "* && "$path" != *" "* ]]; then path="$path $w"
        else ((npos++))
        fi
    done
    case "$path|$prev" in
        "compact|--mode") COMPREPLY=($(compgen -W "summary transcript segments" -- "$cur")); return ;;
        "compact|--detail") COMPREPLY=($(compgen -W "none minimal balanced verbose" -- "$cur")); return ;;
        "export|--format") COMPREPLY=($(compgen -W "md html txt" -- "$cur")); return ;;
        "export|-f") COMPREPLY=($(compgen -W "md html txt" -- "$cur")); return ;;
        "fork|--to") COMPREPLY=($(compgen -W "claude codex grok" -- "$cur")); return ;;
        "fork|--prune") COMPREPLY=($(compgen -W "cache-aware tiered" -- "$cur")); return ;;
        "proxy|--print-env") COMPREPLY=($(compgen -W "claude codex" -- "$cur")); return ;;
        "prune|--strategy") COMPREPLY=($(compgen -W "cache-aware tiered" -- "$cur")); return ;;
        "resume|--format") COMPREPLY=($(compgen -W "items openai anthropic" -- "$cur")); return ;;
        "resume|-f") COMPREPLY=($(compgen -W "items openai anthropic" -- "$cur")); return ;;
        "search|--agent") COMPREPLY=($(compgen -W "catty claude codex gemini opencode" -- "$cur")); return ;;
        "usage|--by") COMPREPLY=($(compgen -W "model day week month session project agent block" -- "$cur")); return ;;
    esac
    if [[ "$cur" != -* && "$valued" != *" $prev "* ]]; then
        case "$path|$npos" in
        "completion|0") COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return ;;
        "config|0") COMPREPLY=($(compgen -W "show" -- "$cur")); return ;;
        "import|0") COMPREPLY=($(compgen -W "claude codex opencode gemini grok openai anthropic auto" -- "$cur")); return ;;
        esac
    fi
    local opts=""
    case "${path:-__root__}" in
        "__root__") opts="--help --version -h append blob compact completion config eval export fork hook import index inspect instructions mcp proxy prune repair report resume search segment statusline usage" ;;
        "append") opts="--allow-duplicate-ids --create --cwd --help --lock-timeout --max-tool-bytes --max-user-bytes --model --no-repair --quiet --session-id --window -h -q" ;;
        "blob") opts="--help --raw -h" ;;
        "compact") opts="--agent --allow-empty --allow-remote-writes --check --connect-timeout --deadline --detail --dry-run --force --help --json --lock-timeout --max-response-bytes --min-summary-chars --mode --no-redact --prefire --prefire-wait --replay --scheduler --summarizer --threshold --timeout --two-pass -h" ;;
        "completion") opts="--help -h" ;;
        "config") opts="--help --json -h" ;;
        "eval") opts="--compactions --connect-timeout --facts --facts-only --help --jobs --json --judge --max-response-bytes --min-recall --min-summary-chars --mode --native --out --replay --retries --scheduler --stress --summarizer --timeout --two-pass -h -j" ;;
        "export") opts="--format --help --out --redact -f -h -o" ;;
        "fork") opts="--agent --at-turn --compact --cwd --dry-run --help --json --max-bytes --model --prune --repair --session-id --to -h" ;;
        "hook") opts="--help -h claude codex install uninstall" ;;
        "hook claude") opts="--help -h pre-compact session-start" ;;
        "hook claude pre-compact") opts="--deadline --help --mirrors --plugin -h" ;;
        "hook claude session-start") opts="--deadline --help --mirrors --plugin -h" ;;
        "hook codex") opts="--help -h pre-compact session-start" ;;
        "hook codex pre-compact") opts="--deadline --help --mirrors --plugin -h" ;;
        "hook codex session-start") opts="--deadline --help --mirrors --plugin -h" ;;
        "hook install") opts="--codex-home --command --dry-run --help --mcp --scope --settings --statusline -h" ;;
        "hook uninstall") opts="--codex-home --command --dry-run --help --mcp --scope --settings --statusline -h" ;;
        "import") opts="--dry-run --help --lenient --max-tool-bytes --max-user-bytes --out --session -h" ;;
        "index") opts="--drop --help --json -h" ;;
        "inspect") opts="--agent --agents --allow-empty --connect-timeout --context --help --items --json --scheduler --seq --stats -h" ;;
        "instructions") opts="--append --help --json --lock-timeout --no-global -h" ;;
        "mcp") opts="--codex-home --help --session -h" ;;
        "proxy") opts="--allow-remote --anthropic-upstream --help --listen --max-body-bytes --no-compact --no-prefire --no-prune --no-record --no-repair --openai-upstream --print-env --root --summarizer --threshold --window -h" ;;
        "prune") opts="--agent --clear-at-least --clear-inputs --exclude-tools --help --high --image-high --image-low --keep --keep-turns --low --min-percent --omit-age --previous --session-ref --stats --strategy --trim-head --trim-over --trim-tail --window -h" ;;
        "repair") opts="--allow-empty --allow-remote-writes --check --connect-timeout --dry-run --force --help --json --lock-timeout --scheduler -h" ;;
        "report") opts="--agent --help --output -h -o" ;;
        "resume") opts="--agent --format --help -f -h" ;;
        "search") opts="--agent --help --ignore-case --json --limit --project --regexp --since --until -E -h -i -n" ;;
        "segment") opts="--help -h grep list show" ;;
        "segment grep") opts="--agent --help --ignore-case --json --regex -E -h -i" ;;
        "segment list") opts="--agent --help --json -h" ;;
        "segment show") opts="--agent --help -h" ;;
        "statusline") opts="--format --help --json --mirrors -f -h" ;;
        "usage") opts="--allow-empty --by --connect-timeout --help --jobs --json --no-cache --prices --scheduler --since --strict --timezone --until --verbose -h -j -v" ;;
    esac
    if [[ "$cur" == -* || -z "$path" || "$groups" == *" $path "* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _catty_ctx catty-ctx
