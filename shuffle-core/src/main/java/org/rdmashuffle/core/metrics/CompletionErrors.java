package org.rdmashuffle.core.metrics;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

import org.rdmashuffle.verbs.WorkCompletionStatus;

/**
 * Work completions that did not succeed, by status: what an operator looks at first when reads fail
 * (RNR and retry exceeded point at the peer or the fabric, remote access at rkeys and leases, flush at
 * a queue pair that went to error). Counted by the completion router for every kind of work request.
 */
public final class CompletionErrors {
    private final AtomicLongArray byStatus = new AtomicLongArray(WorkCompletionStatus.values().length);

    public void failed(WorkCompletionStatus status) {
        byStatus.incrementAndGet(status.ordinal());
    }

    /** Counts by status, for every status but SUCCESS (0 where none). */
    public Map<WorkCompletionStatus, Long> snapshot() {
        Map<WorkCompletionStatus, Long> m = new EnumMap<>(WorkCompletionStatus.class);
        for (WorkCompletionStatus s : WorkCompletionStatus.values()) {
            if (s != WorkCompletionStatus.SUCCESS) {
                m.put(s, byStatus.get(s.ordinal()));
            }
        }
        return m;
    }
}
