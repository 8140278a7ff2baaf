package org.rdmashuffle.verbs;

/**
 * {@code enum ibv_mw_type}. A type 1 window is bound with {@link QueuePair#bindWindow} and serves a
 * remote access on any queue pair of its protection domain; a type 2 window is bound by a work
 * request on one queue pair ({@link SendWorkRequest#bindWindow}, {@link WorkRequestBuilder#bindWindow}),
 * serves remote accesses arriving on that queue pair only, and is taken back by invalidation.
 */
public enum MemoryWindowType {
    TYPE_1(1), TYPE_2(2);

    private final int code;

    MemoryWindowType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }
}
