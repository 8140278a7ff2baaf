package org.rdmashuffle.benchmarks;

import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * What the benchmarks' main classes share in reading their command lines. A bad argument is an
 * {@link IllegalArgumentException} whose message names the option and the value; {@link #parseOrExit}
 * turns it into one line on stderr and exit status 2, never a stack trace. The scripts that run these
 * classes (bin/shuffle-job, bin/soak, benchmarks/*.sh) check the same in bash before they build, so a
 * person sees these messages only when running a class with {@code java} directly.
 */
public final class CommandLine {
    /** The exit status of a usage error, as the scripts use it. */
    public static final int USAGE_ERROR = 2;

    /**
     * A link rate as {@code tc} takes it and the cluster bed passes it on: a number and a unit of bits
     * or bytes per second (25gbit, 10gbit, 500mbit, 1gibit, 100mbps).
     */
    public static final Pattern RATE = Pattern.compile("[0-9]+(\\.[0-9]+)?([kmgt]i?)?(bit|bps)", Pattern.CASE_INSENSITIVE);

    private CommandLine() {
    }

    /** The parsed command line, or (on a bad argument) {@code program: message} on stderr and exit status 2. */
    public static <T> T parseOrExit(String program, Supplier<T> parse) {
        try {
            return parse.get();
        } catch (IllegalArgumentException e) {
            System.err.println(program + ": " + e.getMessage());
            System.exit(USAGE_ERROR);
            throw e; // not reached
        }
    }

    /** Argument {@code i}, the value of {@code option}, or an error saying the value is missing. */
    public static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    /** {@code value} as a whole number of at least {@code min}, or an error naming the option and the value. */
    public static int atLeast(String option, String value, int min) {
        return wholeNumber(option, value, min, Integer.MAX_VALUE);
    }

    /** {@code value} as a whole number in {@code min..max}, or an error naming the option and the value. */
    public static int wholeNumber(String option, String value, int min, int max) {
        int n;
        try {
            n = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " takes a whole number, not '" + value + "'");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(option + (max == Integer.MAX_VALUE ? " must be at least " + min
                    : " must be " + min + ".." + max) + ", not " + n);
        }
        return n;
    }

    /** {@code value} as a number above 0 (a decimal such as 0.1), or an error naming the option and the value. */
    public static double positiveNumber(String option, String value) {
        double d;
        try {
            d = Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " takes a number such as 0.1 or 1, not '" + value + "'");
        }
        if (!(d > 0) || Double.isInfinite(d)) {
            throw new IllegalArgumentException(option + " must be a number above 0, not '" + value + "'");
        }
        return d;
    }

    /** {@code value} as a link rate ({@link #RATE}), or an error naming the option and the value. */
    public static String rate(String option, String value) {
        if (!RATE.matcher(value).matches()) {
            throw new IllegalArgumentException(option + " takes a rate such as 25gbit or 500mbit, not '" + value + "'");
        }
        return value;
    }
}
