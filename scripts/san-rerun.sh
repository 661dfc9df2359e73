#!/bin/sh
# After a failed ctest run under the sanitizers (make test-san): rerun, once,
# the tests whose only failure was LeakSanitizer's own stop-the-world tracer
# crashing at exit ("Tracer caught signal 11" then "LeakSanitizer has
# encountered a fatal error").  That crash is a race in the sanitizer runtime
# with threads that are still ending when the leak check starts (an OpenCL
# platform's workers, for one); it reports no leak and says nothing about
# axle.  A test that failed in any other way, or that also printed a
# sanitizer report or a failed check, is not rerun, and the run fails.
#
# usage: sh scripts/san-rerun.sh BUILD_DIR   (the environment as for ctest)
set -u
dir=${1:?usage: san-rerun.sh BUILD_DIR}
log=$dir/Testing/Temporary/LastTest.log
failed=$dir/Testing/Temporary/LastTestsFailed.log
[ -f "$log" ] && [ -f "$failed" ] || { echo "san-rerun: no ctest logs in $dir"; exit 1; }

rerun=
for t in $(sed 's/^[0-9]*://' "$failed"); do
    # the test's section of LastTest.log: from "N/M Testing: t" to its verdict
    out=$(awk -v t="$t" '
        $0 ~ /^[0-9]+\/[0-9]+ Testing: / { on = ($3 == t) }
        on { print }
        on && /^Test (Passed|Failed)/ { on = 0 }' "$log")
    if printf '%s\n' "$out" | grep -q 'Tracer caught signal' &&
       printf '%s\n' "$out" | grep -q 'LeakSanitizer has encountered a fatal error' &&
       ! printf '%s\n' "$out" | grep -q -E 'ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:|^FAIL|[1-9][0-9]* failed'; then
        echo "san-rerun: $t: LeakSanitizer's tracer crashed at exit (a race in the sanitizer runtime, no leak reported); running it again"
        rerun="$rerun${rerun:+|}$t"
    else
        echo "san-rerun: $t failed (not the tracer's crash)"
        exit 1
    fi
done
[ -n "$rerun" ] || exit 1
cd "$dir" && ctest --output-on-failure --no-tests=error -R "^($rerun)\$"
