package org.rdmashuffle.core.transport;

/**
 * What a completion's wr_id names. The top two bits say the kind; the rest is a receive-pool slot, a
 * message send, a read chain or a chain of memory-window binds. Sends and chains take ids from one counter that never repeats, so a
 * late completion of a destroyed queue pair can never be mistaken for a live request.
 */
public final class WorkRequestIds {
    public static final int RECEIVE = 0;
    public static final int SEND = 1;
    public static final int READ = 2;
    /** A chain of memory-window binds of a serving connection (its value is not looked at). */
    public static final int WINDOW = 3;

    private static final int SHIFT = 62;
    private static final long VALUE_MASK = (1L << SHIFT) - 1;

    private WorkRequestIds() {
    }

    public static long of(int kind, long value) {
        return ((long) kind << SHIFT) | (value & VALUE_MASK);
    }

    public static int kind(long wrId) {
        return (int) (wrId >>> SHIFT);
    }

    public static long value(long wrId) {
        return wrId & VALUE_MASK;
    }
}
