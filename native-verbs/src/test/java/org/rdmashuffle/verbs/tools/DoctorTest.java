package org.rdmashuffle.verbs.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;

/** The doctor reports what the provider sees, and its verdict agrees with the provider's availability. */
class DoctorTest {

    @Test
    void reportMatchesWhatTheProviderSees() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        boolean usable = Doctor.report("auto", new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        IbverbsProvider ibv = IbverbsProvider.instance();
        assertTrue(usable, "the software provider is always usable, so auto always finds one:\n" + out);
        assertTrue(out.contains("software provider (RC over TCP"), out);
        assertTrue(out.contains("memlock limit (ulimit -l): " + IbverbsProvider.bytes(ibv.memlockLimitBytes())), out);
        if (ibv.isAvailable()) {
            assertTrue(out.contains("provider choice (auto): ibverbs"), out);
            for (VerbsDevice d : ibv.devices()) {
                assertTrue(out.contains("device " + d.name()), out);
            }
            assertTrue(out.contains("port 1: "), out);
            assertTrue(out.contains("GID["), out);
            assertTrue(out.contains("on-demand paging: "), out);
        } else {
            assertTrue(out.contains("provider choice (auto): software"), out);
            assertTrue(out.contains("not ibverbs: " + ibv.unavailabilityCause()), out);
        }
    }

    @Test
    void unknownProviderIsNamed() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        boolean usable = Doctor.report("carrier-pigeon", new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(!usable);
        assertTrue(out.contains("unknown provider 'carrier-pigeon'; known: auto, ibverbs, software"), out);
    }
}
