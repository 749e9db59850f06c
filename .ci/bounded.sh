#!/usr/bin/env bash
# Runs one CI command with a time bound and tees its output to a log:
#
#     .ci/bounded.sh <seconds> <log> <command> [arguments...]
#
# A test that waits on something that never happens (a continuation nobody resumes)
# cannot be ended by Swift Testing's `.timeLimit`, which only cancels the test's task.
# Without a bound, such a hang runs into CI's overall limit and leaves no trace. With
# one, the step fails in time and says what was stuck:
#   - the tests that started and never ended (from Swift Testing's "started" and
#     "passed" / "failed" lines);
#   - every thread's backtrace in each still-running process the command started
#     (gdb, or the toolchain's lldb), so the waiting code is named;
# then the command's whole process group is killed. Exit status: the command's own,
# or 124 after a hang.
set -uo pipefail

limit=$1
log=$2
shift 2

# Appending: whatever writes to the log (the command, the hang report) writes at its end.
: >"$log"
# The command leads its own process group, so a hang can be ended with everything
# it started (swift test runs the suite in a child process).
set -m
"$@" >>"$log" 2>&1 &
command_pid=$!
set +m
tail -n +1 -f --pid="$command_pid" "$log" &
tailer=$!

# The command and every process it started (swift test runs the suite in a child).
group_members() {
    pgrep -g "$command_pid" || true
}

# Runs gdb (or the toolchain's lldb) on a process with the given commands.
debugger() {
    local pid=$1 gdb_command=$2 lldb_command=$3
    if command -v gdb >/dev/null; then
        timeout 120 gdb -p "$pid" -batch -ex "$gdb_command" 2>&1
    elif command -v lldb >/dev/null; then
        timeout 120 lldb -p "$pid" --batch -o "$lldb_command" 2>&1
    else
        echo "(neither gdb nor lldb found)"
    fi
}

report_hang() {
    echo
    echo "=== HANG: \"$*\" still running after ${limit}s"
    # Output to a pipe or file is block-buffered: flush what the processes printed
    # last, or the log would stop mid-line, thousands of bytes before the hang.
    for pid in $(group_members); do
        debugger "$pid" "call (int)fflush(0)" "expression (int)fflush(0)" >/dev/null
    done
    local started ended
    started="$(sed -nE 's/^◇ Test (.*) started\.$/\1/p' "$log" | sort -u)"
    ended="$(sed -nE 's/^[✔✘↷] Test (.*) (passed|failed|skipped).*$/\1/p' "$log" | sed -E 's/ with [0-9]+ test cases?$//' | sort -u)"
    echo "--- tests that started and never ended:"
    comm -23 <(echo "$started") <(echo "$ended") | grep -v '^Test case passing' || echo "(none recorded)"
    for pid in $(group_members); do
        echo "--- backtraces of $(ps -o args= -p "$pid" | cut -c1-200) (pid $pid):"
        debugger "$pid" "thread apply all bt" "thread backtrace all" | grep -vE '^\[|^Using host|^Reading symbols' || true
    done
}

waited=0
while kill -0 "$command_pid" 2>/dev/null; do
    if ((waited >= limit)); then
        report_hang "$@" >>"$log"
        kill -KILL -- "-$command_pid" 2>/dev/null
        wait "$command_pid" 2>/dev/null
        wait "$tailer"
        exit 124
    fi
    sleep 1
    waited=$((waited + 1))
done
wait "$tailer"
wait "$command_pid"
