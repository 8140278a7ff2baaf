package org.rdmashuffle.verbs;

/** Byte counts in words for messages: the largest binary unit that divides them (8 MiB), else bytes. */
public final class Sizes {
    private Sizes() {
    }

    /** {@code n} as "8 MiB", "3 KiB" or "1234 B"; a negative count (no limit) as "unlimited". */
    public static String describe(long n) {
        if (n < 0) {
            return "unlimited";
        }
        if (n >= 1L << 30 && n % (1L << 30) == 0) return (n >> 30) + " GiB";
        if (n >= 1L << 20 && n % (1L << 20) == 0) return (n >> 20) + " MiB";
        if (n >= 1L << 10 && n % (1L << 10) == 0) return (n >> 10) + " KiB";
        return n + " B";
    }
}
