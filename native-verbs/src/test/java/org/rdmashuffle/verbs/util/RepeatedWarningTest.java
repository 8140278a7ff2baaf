package org.rdmashuffle.verbs.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import org.junit.jupiter.api.Test;

/** A warning a peer can make us repeat is logged once per quiet period, with the count of the rest. */
class RepeatedWarningTest {
    private static final String NAME = RepeatedWarningTest.class.getName() + ".log";

    @Test
    void aThousandRefusalsInAMinuteAreOneWarning_andTheNextSaysHowManyWereHeldBack() {
        Logger jul = Logger.getLogger(NAME);
        List<LogRecord> warnings = new ArrayList<>();
        Handler h = new Handler() {
            @Override
            public synchronized void publish(LogRecord r) {
                if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                    warnings.add(r);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        jul.addHandler(h);
        try {
            java.util.concurrent.atomic.AtomicLong clock = new java.util.concurrent.atomic.AtomicLong();
            RepeatedWarning w = new RepeatedWarning(System.getLogger(NAME), 200, TimeUnit.MILLISECONDS, clock::get);
            for (int i = 0; i < 1000; i++) {
                w.warn("refused connection " + i);
            }
            assertEquals(1, warnings.size(), "one warning for the burst");
            assertEquals("refused connection 0", warnings.getFirst().getMessage());
            assertEquals(999, w.suppressed());
            assertEquals(1000, w.calls());
            assertEquals(1, w.warnings());
            clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(300)); // the quiet period has passed
            w.warn("refused connection 1000");
            assertEquals(2, warnings.size());
            assertTrue(warnings.get(1).getMessage().contains("and 999 more"), warnings.get(1).getMessage());
            assertEquals(0, w.suppressed());
        } finally {
            jul.removeHandler(h);
        }
    }
}
