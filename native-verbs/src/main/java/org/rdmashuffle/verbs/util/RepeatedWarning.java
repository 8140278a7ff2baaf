package org.rdmashuffle.verbs.util;

import java.util.concurrent.TimeUnit;

/**
 * A warning a peer can make us repeat at will (a connection refused, a handshake that never came):
 * the first goes to the log at WARNING; those within the next quiet period go at DEBUG and are
 * counted, and the next one let through says how many there were. Thousands of hostile connections
 * then cost a few log lines, not thousands, and the operator still learns their number.
 */
public final class RepeatedWarning {
    private final System.Logger log;
    private final long quietNanos;
    private final java.util.function.LongSupplier nanoTime;
    private long lastWarned = Long.MIN_VALUE;
    private long suppressed;
    private long calls;
    private long warnings;

    public RepeatedWarning(System.Logger log, long quiet, TimeUnit unit) {
        this(log, quiet, unit, System::nanoTime);
    }

    /** With its own clock (tests: a slow machine must not make a burst span two quiet periods). */
    RepeatedWarning(System.Logger log, long quiet, TimeUnit unit, java.util.function.LongSupplier nanoTime) {
        this.log = log;
        this.quietNanos = unit.toNanos(quiet);
        this.nanoTime = nanoTime;
    }

    /** Logs {@code message}: at WARNING if the quiet period has passed since the last one, else at DEBUG. */
    public void warn(String message) {
        long now = nanoTime.getAsLong();
        long before;
        synchronized (this) {
            calls++;
            if (lastWarned != Long.MIN_VALUE && now - lastWarned < quietNanos) {
                suppressed++;
                before = -1;
            } else {
                before = suppressed;
                suppressed = 0;
                lastWarned = now;
                warnings++;
            }
        }
        if (before < 0) {
            log.log(System.Logger.Level.DEBUG, message);
        } else if (before == 0) {
            log.log(System.Logger.Level.WARNING, message);
        } else {
            log.log(System.Logger.Level.WARNING, message + " (and " + before + " more like it since the last warning, "
                    + "logged at DEBUG)");
        }
    }

    /** Warnings held back since the last one let through. */
    public synchronized long suppressed() {
        return suppressed;
    }

    /** Every {@link #warn} so far. */
    public synchronized long calls() {
        return calls;
    }

    /** Those logged at WARNING. */
    public synchronized long warnings() {
        return warnings;
    }
}
