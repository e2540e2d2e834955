# bash completion for coz (installed as share/bash-completion/completions/coz).
# Commands, each command's options (as `coz <command> --help` lists them),
# their values where they are a fixed set, profiles (*.coz) for report and
# plot, and after `coz run ... ---` (or `--`) the program and its own arguments.

_coz_files() {  # _coz_files [GLOB]: files matching GLOB (all files without one) and directories
  local IFS=$'\n'
  if [[ -n $1 ]]; then
    COMPREPLY+=($(compgen -f -X "!$1" -- "$cur") $(compgen -d -- "$cur"))
  else
    COMPREPLY+=($(compgen -f -- "$cur"))
  fi
  if declare -F compopt >/dev/null; then compopt -o filenames 2>/dev/null; fi
}

_coz() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion -n = || return
  else
    COMPREPLY=()
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
  fi

  if ((cword == 1)); then
    COMPREPLY=($(compgen -W 'run report plot help --help -V --version' -- "$cur"))
    return
  fi

  local command=${words[1]}
  case $command in
    run)
      # After ---: the program, then whatever completes its own arguments.
      local i
      for ((i = 2; i < cword; i++)); do
        if [[ ${words[i]} == --- || ${words[i]} == -- ]]; then
          if ((i + 1 == cword)); then
            COMPREPLY=($(compgen -c -- "$cur"))
            _coz_files
          elif declare -F _command_offset >/dev/null; then
            _command_offset $((i + 1))
          else
            _coz_files
          fi
          return
        fi
      done
      case $prev in
        -o | --output) _coz_files '*.coz'; return ;;
        -b | --binary-scope | -s | --source-scope | --progress | --latency | --fixed-line)
          _coz_files; return ;;
        --granularity) COMPREPLY=($(compgen -W 'auto line function' -- "$cur")); return ;;
        --allocation) COMPREPLY=($(compgen -W 'aimed samples' -- "$cur")); return ;;
        --format) COMPREPLY=($(compgen -W 'coz coz-jsonl' -- "$cur")); return ;;
        --stop-signal) COMPREPLY=($(compgen -W 'INT TERM HUP QUIT USR1 USR2' -- "$cur")); return ;;
        --period) COMPREPLY=($(compgen -W '1ms 500us 2ms 4ms' -- "$cur")); return ;;
        --max-time) COMPREPLY=($(compgen -W '30s 90s 5min' -- "$cur")); return ;;
        --fixed-speedup | --top | --join) return ;;
      esac
      COMPREPLY=($(compgen -W '--help --output --format --binary-scope --source-scope --progress --latency
        --fixed-line --fixed-speedup --end-to-end --granularity --period --quiet --until-settled --top
        --max-time --stop-signal --allocation --system --join --verbose --version ---' -- "$cur"))
      ;;
    report)
      case $prev in
        --baseline) COMPREPLY=($(compgen -W 'local pooled line' -- "$cur")); return ;;
        --top | --point | --min-experiments) return ;;
        --pprof) _coz_files; return ;;
      esac
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '--help --version --top --point --min-experiments --baseline --json
          --compare --collapsed --pprof --no-color' -- "$cur"))
      else
        _coz_files '*.coz'
      fi
      ;;
    plot)
      case $prev in
        -o | --output) _coz_files '*.html'; return ;;
      esac
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '--help --version --output --open' -- "$cur"))
      else
        _coz_files '*.coz'
      fi
      ;;
  esac
}
complete -F _coz coz
