# bash completion for catty-ctx (generated; do not edit)
_catty_ctx() {
    local cur prev path="" w i
    cur="${COMP_WORDS[COMP_CWORD]}"
    prev="${COMP_WORDS[COMP_CWORD-1]}"
    local groups=" segment "
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${COMP_WORDS[i]}"
        [[ "$w" == -* ]] && continue
        if [[ -z "$path" ]]; then path="$w"
        elif [[ "$groups" == *" $path "* ]]; then path="$path $w"; break
        else break
        fi
    done
    case "$path|$prev" in

    esac
    local opts=""
    case "${path:-__root__}" in
        "__root__") opts="--help --version -h append blob completion fork inspect instructions repair resume segment" ;;
        "append") opts="--create --cwd --help --lock-timeout --max-tool-bytes --max-user-bytes --model --quiet --session-id --window -h -q" ;;
        "blob") opts="--help -h" ;;
        "completion") opts="--help -h" ;;
        "fork") opts="--at-turn --cwd --dry-run --help --json --model -h" ;;
        "inspect") opts="--context --help --items --json --seq -h" ;;
        "instructions") opts="--append --help --json --lock-timeout --no-global -h" ;;
        "repair") opts="--check --dry-run --help --json --lock-timeout -h" ;;
        "resume") opts="--format --help -f -h" ;;
        "segment") opts="--help -h grep list show" ;;
        "segment grep") opts="--help --ignore-case --json --regex -E -h -i" ;;
        "segment list") opts="--help --json -h" ;;
        "segment show") opts="--help -h" ;;
    esac
    if [[ "$cur" == -* || -z "$path" || "$groups" == *" $path "* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -F _catty_ctx catty-ctx
