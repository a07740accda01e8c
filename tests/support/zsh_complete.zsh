# What zsh's own completion offers for a command line: zsh zsh_complete.zsh FPATH_DIR 'LINE'
# prints one candidate a line. An interactive zsh on a pseudo-terminal (zpty) loads the
# completions from FPATH_DIR with compinit; TAB is typed after LINE and every candidate that
# reaches compadd is printed with a marker the echoed input cannot hold.
zmodload zsh/zpty || exit 3
dir=$1; line=$2
zpty z zsh -f -i
zpty -w z "PROMPT='' ; fpath=($dir \$fpath); autoload -U compinit; compinit -u -D; m=HI; m+=T"
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a __hits; builtin compadd -A __hits "$@"; local h; for h in $__hits; do print -r -- "${m}:$h"; done; }'
zpty -w -n z "$line"$'\t'
out=""
integer tries=0 quiet=0
while (( tries++ < 100 )); do
  if zpty -r -t z chunk; then out+=$chunk; quiet=0; else (( quiet++ )); sleep 0.05; fi
  [[ $out == *HIT:* ]] && (( quiet >= 8 )) && break
done
print -r -- "$out" | tr -d '\r' | grep -ao 'HIT:[^[:space:]]*' | cut -d: -f2- | sort -u
zpty -d z
