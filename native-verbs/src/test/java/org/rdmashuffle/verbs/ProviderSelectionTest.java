package org.rdmashuffle.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/** auto prefers a usable device and otherwise falls back to software; explicit choices are honoured or refused with the cause. */
class ProviderSelectionTest {

    @Test
    void autoTakesIbverbsWhenUsableElseSoftwareAndSaysWhy() {
        Verbs.Selection s = Verbs.select("auto");
        IbverbsProvider ibv = IbverbsProvider.instance();
        if (ibv.isAvailable()) {
            assertSame(ibv, s.provider());
        } else if (Trouble.in(ibv.unavailabilityCause()).filter(t -> t == Trouble.NO_DEVICE || t == Trouble.PLATFORM).isPresent()) {
            // No verbs stack here (a build machine): settled for the software provider, saying so and what was lacking.
            assertSame(SoftwareProvider.instance(), s.provider());
            assertEquals(Trouble.in(ibv.unavailabilityCause()).get(), s.settledFor());
            assertTrue(s.reason().contains("not ibverbs: " + ibv.unavailabilityCause()), s.reason());
            assertTrue(s.reason().contains("settled for the software provider (RC over TCP in the JVM, not RDMA)"), s.reason());
        } else {
            // A device that cannot be used: nothing, so the host's own transport carries the shuffle.
            assertNull(s.provider(), s.reason());
            assertTrue(s.reason().contains("not ibverbs: " + ibv.unavailabilityCause()), s.reason());
        }
        assertTrue(s.reason().startsWith("auto: "), s.reason());
    }

    @Test
    void softwareIsAlwaysAvailable() {
        Verbs.Selection s = Verbs.select("software");
        assertSame(SoftwareProvider.instance(), s.provider());
        assertTrue(s.reason().contains("over TCP"), s.reason());
    }

    /** A bad setting is the reason nothing is chosen, naming its key and value; no provider is made of it. */
    @Test
    void aBadSoftwareSettingIsTheReasonNoProviderIsChosen_namingItsKey() {
        Verbs.Selection port = Verbs.select("software", new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_PORT, "70000")));
        assertNull(port.provider());
        assertEquals("software.port=70000 is not a port", port.reason());
        Verbs.Selection text = Verbs.select("auto", new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_PORT, "x1")));
        assertNull(text.provider());
        assertEquals("software.port=x1 is not a port", text.reason());
        // A malformed IPv6 literal: refused as it is parsed, without a name lookup.
        Verbs.Selection address = Verbs.select("software",
                new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_BIND_ADDRESS, "[::1")));
        assertNull(address.provider());
        assertTrue(address.reason().startsWith("software.bindAddress=[::1 is not an address"), address.reason());
    }

    /** Engines configured alike share one software device (one listener); a different setting gets its own. */
    @Test
    void engineSettingsConfigureTheSoftwareProvider_alikeOnesShareIt() {
        ProviderSettings loopback = new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_BIND_ADDRESS, "127.0.0.1"));
        assertSame(SoftwareProvider.instance(), Verbs.select("software", loopback).provider());
        ProviderSettings sendfile = new ProviderSettings(java.util.Map.of(SoftwareProvider.SETTING_SENDFILE, "true"));
        VerbsProvider other = Verbs.select("software", sendfile).provider();
        assertTrue(other != SoftwareProvider.instance(), "a different setting, a different device");
        assertSame(other, Verbs.select("software", sendfile).provider());
    }

    @Test
    void ibverbsFailsWithTheCauseWhenNoDeviceIsUsable() {
        Verbs.Selection s = Verbs.select(" IBVERBS ");
        IbverbsProvider ibv = IbverbsProvider.instance();
        if (ibv.isAvailable()) {
            assertSame(ibv, s.provider());
        } else {
            assertNull(s.provider());
            VerbsUnavailableException e = assertThrows(VerbsUnavailableException.class, s::orElseThrow);
            assertTrue(e.getMessage().contains(ibv.unavailabilityCause()), e.getMessage());
        }
    }

    /**
     * A JVM told it runs on aarch64 ({@code -Dos.arch=aarch64}; the JDK lets the command line set it): the
     * libibverbs provider refuses with RS10 and lists no device, auto takes the software provider saying why,
     * and ibverbs is refused with the reason. That JVM's own FFM linker follows os.arch too, so any downcall
     * there (libibverbs' handles are made when its class loads) would crash it: exit 0 also shows the refusal
     * comes before the provider touches libibverbs.
     */
    @Test
    void onAJvmOfAnotherArchitecture_ibverbsIsRefusedWithRs10_andAutoTakesTheSoftwareProvider() throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Dos.arch=aarch64",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), PrintChoices.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        String refusal = "RS10 platform: saw the libibverbs provider's struct layouts are generated and checked on x86-64, "
                + "and this JVM runs on aarch64; needs an x86-64 JVM";
        List<String> lines = out.lines().filter(l -> !l.startsWith("Picked up ")).toList(); // a CI's JAVA_TOOL_OPTIONS note
        assertEquals(4, lines.size(), out);
        assertTrue(lines.get(0).startsWith("auto: software -- auto: settled for the software provider (RC over TCP in the JVM, not RDMA)")
                && lines.get(0).contains("; not ibverbs: " + refusal), out);
        assertTrue(lines.get(1).startsWith("ibverbs: none -- ibverbs (configured) is unavailable: " + refusal), out);
        assertEquals("devices: 0", lines.get(2), out);
        assertTrue(lines.get(3).startsWith("device list: " + refusal), out);
    }

    /** The child JVM of the test above: what the choice and the provider's device list say there. */
    static final class PrintChoices {
        public static void main(String[] args) {
            for (String choice : List.of("auto", "ibverbs")) {
                Verbs.Selection s = Verbs.select(choice);
                System.out.println(choice + ": " + (s.provider() == null ? "none" : s.provider().name()) + " -- " + s.reason());
            }
            System.out.println("devices: " + IbverbsProvider.instance().devices().size());
            System.out.println("device list: " + IbverbsProvider.instance().deviceListFailure());
        }
    }

    @Test
    void unknownProviderIsNamedWithTheKnownOnes() {
        Verbs.Selection s = Verbs.select("infiniband-over-carrier-pigeon");
        assertNull(s.provider());
        assertEquals("unknown provider 'infiniband-over-carrier-pigeon'; known: auto, ibverbs, software", s.reason());
    }

    /**
     * Where auto settles for the software provider (this host has no device, or its JVM no checked layouts), the
     * process says so at WARNING once -- with the code of what was lacking and the setting that gives the
     * host's own transport instead -- and later choices at INFO; a device that is usable or refused is not this case.
     */
    @Test
    void whereAutoSettlesForTheSoftwareProvider_itSaysSoAtWarningOnce_withTheCodeAndTheSettingForTheHostsTransport() {
        Verbs.Selection s = Verbs.select("auto");
        org.junit.jupiter.api.Assumptions.assumeTrue(s.settledFor() != null,
                "this host's libibverbs provider is usable or has a device it refuses: auto does not settle here (" + s.reason() + ")");
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger(Verbs.class.getName());
        List<java.util.logging.LogRecord> records = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler h = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                records.add(r);
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
            Verbs.forgetSettledWarning();
            Verbs.choose("auto");
            Verbs.choose("auto");
        } finally {
            jul.removeHandler(h);
        }
        assertEquals(2, records.size(), records.toString());
        assertEquals(java.util.logging.Level.WARNING, records.get(0).getLevel());
        assertEquals(java.util.logging.Level.INFO, records.get(1).getLevel(), "once per process");
        String line = records.get(0).getMessage();
        assertTrue(line.startsWith("rdma-shuffle verbs provider: software -- auto: settled for the software provider "
                + "(RC over TCP in the JVM, not RDMA)"), line);
        assertTrue(line.contains("not ibverbs: " + s.settledFor().prefix()), "the code of what was lacking: " + line);
        assertTrue(line.contains("provider=ibverbs (spark.shuffle.rdma.provider, rdma.shuffle.provider) would instead leave "
                + "the shuffle to Spark's or MapReduce's own transport"), line);
    }
}
