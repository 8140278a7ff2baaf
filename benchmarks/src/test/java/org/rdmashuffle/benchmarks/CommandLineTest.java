package org.rdmashuffle.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The shared readers of the benchmarks' command lines: a value in range, or an error naming the option and the value. */
class CommandLineTest {
    @Test
    void wholeNumbers_inRange_orRefusedNamingOptionAndValue() {
        assertEquals(7, CommandLine.atLeast("--n", "7", 1));
        assertEquals(0, CommandLine.atLeast("--n", "0", 0));
        assertEquals(-20, CommandLine.wholeNumber("--nice", "-20", -20, 19));
        assertEquals("--n takes a whole number, not 'seven'", refused(() -> CommandLine.atLeast("--n", "seven", 1)));
        assertEquals("--n takes a whole number, not '99999999999'", refused(() -> CommandLine.atLeast("--n", "99999999999", 1)));
        assertEquals("--n must be at least 1, not 0", refused(() -> CommandLine.atLeast("--n", "0", 1)));
        assertEquals("--nice must be -20..19, not 25", refused(() -> CommandLine.wholeNumber("--nice", "25", -20, 19)));
        assertEquals("--n needs a value", refused(() -> CommandLine.value(new String[] {"--n"}, 1, "--n")));
    }

    @Test
    void numbersAbove0_andRates() {
        assertEquals(0.1, CommandLine.positiveNumber("--scale", "0.1"));
        assertEquals("--scale must be a number above 0, not '0'", refused(() -> CommandLine.positiveNumber("--scale", "0")));
        assertEquals("--scale must be a number above 0, not 'NaN'", refused(() -> CommandLine.positiveNumber("--scale", "NaN")));
        assertEquals("--scale takes a number such as 0.1 or 1, not 'big'", refused(() -> CommandLine.positiveNumber("--scale", "big")));
        for (String ok : new String[] {"25gbit", "10gbit", "500mbit", "1gibit", "100mbps", "2.5Gbit"}) {
            assertEquals(ok, CommandLine.rate("--rate", ok));
        }
        assertEquals("--rate takes a rate such as 25gbit or 500mbit, not '10g'", refused(() -> CommandLine.rate("--rate", "10g")));
    }

    private static String refused(Runnable parse) {
        return assertThrows(IllegalArgumentException.class, parse::run).getMessage();
    }
}
