#!/usr/bin/env bash
# The run step of action.yml: one `meka --oneshot --json` turn, its events
# kept in a file, the final message, usage, session and status written to
# $GITHUB_OUTPUT. meka's exit status is the step's.
set -u

events="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/meka-events-$$.jsonl"
args=(--oneshot --json --permission "${MEKA_PERMISSION:-workspace}")
if [ -n "${MEKA_ACTION_PROFILE:-}" ]; then args+=(--profile "$MEKA_ACTION_PROFILE"); fi
if [ -n "${MEKA_ACTION_CONFIG:-}" ]; then args+=(--config "$MEKA_ACTION_CONFIG"); fi
export MEKA_DATA_DIR="${MEKA_DATA_DIR:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/meka-data}"

meka "${args[@]}" -- "$MEKA_PROMPT" </dev/null >"$events"
code=$?

# The final message is the last assistant message's text; usage and
# status are the turn's last event's (turn.completed or turn.failed).
result=$(jq -rs '[.[] | select(.type == "message.created" and .data.role == "assistant")] | last | if . == null then "" else [.data.content[] | select(.type == "text") | .text] | join("") end' "$events")
usage=$(jq -cs '[.[] | select(.type == "turn.completed" or .type == "turn.failed")] | last | .data.usage // {}' "$events")
status=$(jq -rs '[.[] | select(.type == "turn.completed" or .type == "turn.failed")] | last | .data.status // "failed"' "$events")
session=$(jq -rs '.[0].data.session_id // ""' "$events")

out="${GITHUB_OUTPUT:-/dev/stdout}"
delim="meka_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
{
  printf 'result<<%s\n%s\n%s\n' "$delim" "$result" "$delim"
  printf 'usage=%s\n' "$usage"
  printf 'status=%s\n' "$status"
  printf 'session-id=%s\n' "$session"
  printf 'events=%s\n' "$events"
} >>"$out"
exit "$code"
