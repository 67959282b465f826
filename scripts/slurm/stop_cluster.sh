#!/usr/bin/env bash
# Stop the one-node test cluster started by start_cluster.sh (best effort).
# Cancels all jobs first (pass --keep-jobs to skip that), then stops slurmd,
# slurmctld and munged via their pid files. Always exits 0.
set -u
export PATH="$PATH:/usr/sbin:/sbin"
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
MUNGE_PID=/run/munge/munged.pid
log() { printf '[stop_cluster] %s\n' "$*" >&2; }

stop_pid() { # pidfile name
    [ -s "$1" ] || return 0
    local pid; pid=$(cat "$1" 2>/dev/null)
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then rm -f "$1"; return 0; fi
    log "stopping $2 (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || { rm -f "$1"; return 0; }; sleep 0.25; done
    log "$2 still alive after 10 s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null
    rm -f "$1"
}

if [ "${1:-}" != --keep-jobs ] && command -v squeue >/dev/null 2>&1 \
   && timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; then
    # %F = array job id (or plain job id). Note: scancel rejects the raw job id
    # of an array task (squeue %A) with "Invalid job id specified".
    jobs=$(timeout 10 squeue -h -o %F 2>/dev/null | sort -u)
    if [ -n "$jobs" ]; then
        log "cancelling jobs: $(echo $jobs)"
        # shellcheck disable=SC2086
        scancel $jobs 2>/dev/null
        # wait up to KillWait+5 s for the job steps to go away
        kw=$(timeout 5 scontrol show config 2>/dev/null | awk '/^KillWait/ {print $3}')
        for _ in $(seq 1 $(( (${kw:-30} + 5) * 2 ))); do
            [ -z "$(timeout 5 squeue -h -t R,CG -o %A 2>/dev/null)" ] && break
            sleep 0.5
        done
    fi
fi

stop_pid "$SLURMD_PID" slurmd
stop_pid "$CTLD_PID" slurmctld
if [ -s "$MUNGE_PID" ]; then
    stop_pid "$MUNGE_PID" munged
fi
log "done"
exit 0
