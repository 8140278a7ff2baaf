package org.rdmashuffle.verbs.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * The doctor reports what the provider sees, verdict first; its JSON is valid and carries the same
 * facts; its command line refuses what it does not know.
 */
class DoctorTest {

    @Test
    void reportMatchesWhatTheProviderSees_verdictFirst() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        boolean usable = Doctor.report("auto", new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        IbverbsProvider ibv = IbverbsProvider.instance();
        String first = out.lines().findFirst().orElseThrow();
        Verbs.Selection s = Verbs.select("auto");
        assertEquals(s.provider() != null, usable, out);
        String carrier = s.provider() == null ? "no usable provider (the engine does not start: Spark's or MapReduce's own transport "
                + "carries the shuffle)" : s.provider().name().equals("software")
                ? "software (the software provider: RC over TCP in the JVM, not RDMA)" : "ibverbs (RDMA over a verbs device)";
        assertEquals("verdict: " + carrier + " -- " + s.reason(), first, out);
        assertTrue(out.contains("software provider (RC over TCP"), out);
        assertTrue(out.contains("memlock limit (ulimit -l): " + IbverbsProvider.bytes(ibv.memlockLimitBytes())), out);
        if (ibv.isAvailable()) {
            assertTrue(first.startsWith("verdict: ibverbs (RDMA over a verbs device) -- auto: ibverbs is usable"), out);
            for (VerbsDevice d : ibv.devices()) {
                assertTrue(out.contains("device " + d.name()), out);
            }
            assertTrue(out.contains("port 1: "), out);
            assertTrue(out.contains("GID["), out);
            assertTrue(out.contains("on-demand paging: "), out);
        } else {
            // Settled for the software provider (no device here), or nothing where a device is unusable: never "RDMA".
            assertTrue(s.provider() == null || s.settledFor() != null, out);
            assertFalse(first.contains("RDMA over"), out);
            assertTrue(first.contains("not ibverbs: " + ibv.unavailabilityCause()), out);
            assertTrue(out.contains("availability: unavailable -- " + ibv.unavailabilityCause()), out);
        }
    }

    @Test
    void unknownProviderIsNamed() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        boolean usable = Doctor.report("carrier-pigeon", new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertFalse(usable);
        assertTrue(out.startsWith("verdict: no usable provider (the engine does not start: Spark's or MapReduce's own transport "
                + "carries the shuffle) -- unknown provider 'carrier-pigeon'; known: auto, ibverbs, software"),
                out);
    }

    @Test
    void json_isValid_andCarriesTheSameFactsAsTheText() {
        Doctor.Findings f = Doctor.examine("auto", null);
        Object parsed = Json.parse(Doctor.json(f.json()));
        Map<?, ?> root = (Map<?, ?>) parsed;
        assertEquals(List.of("verdict", "java", "memlock", "ibverbs", "software"), List.copyOf(root.keySet()));
        Map<?, ?> verdict = (Map<?, ?>) root.get("verdict");
        Verbs.Selection s = Verbs.select("auto");
        assertEquals("auto", verdict.get("choice"));
        assertEquals(s.provider() == null ? null : s.provider().name(), verdict.get("provider"));
        assertEquals(s.provider() != null, verdict.get("usable"));
        assertEquals(s.provider() == null ? "hostTransport" : s.provider().name().equals("software") ? "softwareProvider" : "device",
                verdict.get("carrier"));
        assertEquals(s.reason(), verdict.get("reason"));
        assertTrue(f.text().startsWith(f.verdict() + "\n"), f.text());

        IbverbsProvider ibv = IbverbsProvider.instance();
        Map<?, ?> memlock = (Map<?, ?>) root.get("memlock");
        assertEquals(IbverbsProvider.bytes(ibv.memlockLimitBytes()), memlock.get("limit"));
        assertEquals(ibv.memlockLimitBytes() < 0 ? null : ibv.memlockLimitBytes(), memlock.get("limitBytes"));
        assertEquals(IbverbsProvider.ipcLockEffective(), memlock.get("ipcLockEffective"));
        Map<?, ?> ibverbs = (Map<?, ?>) root.get("ibverbs");
        assertEquals(ibv.isAvailable(), ibverbs.get("available"));
        assertEquals(ibv.devices().size(), ((List<?>) ibverbs.get("devices")).size());
        assertTrue(f.text().contains((String) ibverbs.get("cause")), f.text());
        Map<?, ?> software = (Map<?, ?>) root.get("software");
        assertEquals(true, software.get("available"));
        assertTrue(f.text().contains("usable -- " + software.get("cause")), f.text());
        Map<?, ?> java = (Map<?, ?>) root.get("java");
        assertEquals(Runtime.version().toString(), java.get("version"));
    }

    /** The device section is the same code for every provider: the software provider's device exercises it here. */
    @Test
    void aDevice_itsPortsAndGids_inTextAndJson() {
        VerbsDevice device = SoftwareProvider.instance().devices().get(0);
        Doctor.Findings f = Doctor.describeDevice(device);
        Map<?, ?> d = (Map<?, ?>) Json.parse(Doctor.json(f.json()));
        assertEquals(device.name(), d.get("name"));
        assertNull(d.get("error"), f.text());
        assertTrue(f.text().contains("  device " + device.name() + "  node GUID " + d.get("nodeGuid")), f.text());
        Map<?, ?> limits = (Map<?, ?>) d.get("limits");
        assertTrue(f.text().contains("max QP " + limits.get("maxQp") + ", max QP WR " + limits.get("maxQpWr")), f.text());
        assertEquals(Long.toUnsignedString(Long.MAX_VALUE), String.valueOf(limits.get("maxMrSize")));
        List<?> ports = (List<?>) d.get("ports");
        assertEquals(1, ports.size());
        Map<?, ?> port = (Map<?, ?>) ports.get(0);
        assertEquals(1L, port.get("number"));
        assertEquals("ACTIVE", port.get("state"));
        assertTrue(f.text().contains("port 1: ACTIVE (LINK_UP), link layer " + port.get("linkLayer")), f.text());
        List<?> gids = (List<?>) port.get("gids");
        assertEquals(1, gids.size());
        Map<?, ?> gid = (Map<?, ?>) gids.get(0);
        assertTrue(f.text().contains("GID[0] " + gid.get("gid")), f.text());
        Map<?, ?> use = (Map<?, ?>) port.get("queuePairsUse");
        assertEquals(0L, use.get("gidIndex"));
        assertTrue(f.text().contains("queue pairs would use GID[0] " + use.get("gid") + ": " + use.get("reason")), f.text());
        assertEquals(false, ((Map<?, ?>) d.get("onDemandPaging")).get("supported"));
    }

    @Test
    void stringsAreEscaped() {
        String nasty = "a \"quoted\" back\\slash\nnew line\ttab \u0001 \u001f caf\u00e9 \u2028";
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("s", nasty);
        m.put("list", List.of(1, true, "x"));
        m.put("none", null);
        m.put("empty", Map.of());
        String text = Doctor.json(m);
        assertTrue(text.contains("\\u0001") && text.contains("\\u001f") && text.contains("\\n") && text.contains("\\\""), text);
        Map<?, ?> back = (Map<?, ?>) Json.parse(text);
        assertEquals(nasty, back.get("s"));
        assertEquals(List.of(1L, true, "x"), back.get("list"));
        assertTrue(back.containsKey("none") && back.get("none") == null);
        assertEquals(Map.of(), back.get("empty"));
    }

    @Test
    void commandLine_helpJsonProviderAndAddress_orARefusalNamingTheArgument() {
        assertTrue(Doctor.Invocation.parse("--help").help());
        assertTrue(Doctor.Invocation.parse("-h").help());
        Doctor.Invocation i = Doctor.Invocation.parse("--json", "ibverbs", "127.0.0.1");
        assertTrue(i.json());
        assertEquals("ibverbs", i.choice());
        assertEquals("127.0.0.1", i.address().getHostAddress());
        assertEquals("auto", Doctor.Invocation.parse().choice());
        for (String[] bad : List.of(new String[] {"--no-such-flag"}, new String[] {"carrier-pigeon"},
                new String[] {"auto", "[::1"}, new String[] {"auto", "127.0.0.1", "extra"})) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Doctor.Invocation.parse(bad));
            assertTrue(e.getMessage().contains(bad[bad.length - 1]), e.getMessage());
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
        }
    }

    /** The JVM itself: a bad flag is one line on stderr and exit 2 (no stack trace); --help exits 0. */
    @Test
    void main_refusesAnUnknownFlagInOneLine_andAnswersHelp() throws IOException, InterruptedException {
        Run bad = runMain("--no-such-flag");
        assertEquals(2, bad.exit(), bad::toString);
        assertEquals(List.of("doctor: unknown option '--no-such-flag' (options: --json, --help); --help for usage"),
                bad.err().lines().toList());
        assertEquals("", bad.out());
        Run help = runMain("--help");
        assertEquals(0, help.exit(), help::toString);
        assertTrue(help.out().startsWith("usage: bin/doctor [--json]"), help.out());
    }

    /** Both streams in a failure's message: a JVM that dies says why on stdout (the fatal-error header). */
    private record Run(int exit, String out, String err) {
        @Override
        public String toString() {
            return "exit " + exit + "; stdout:\n" + out + "\nstderr:\n" + err;
        }
    }

    private static Run runMain(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                // Once (forky's guest stage, CI of 2026-12-02) a child JVM with the default heap, a quarter of the
                // guest's 3 GiB beside the test JVM's, exited 134 with nothing on stderr: a small heap takes memory out
                // of the question, and a failure now shows stdout, where a JVM that dies says why.
                "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"), Doctor.class.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        byte[] err = p.getErrorStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return new Run(p.exitValue(), new String(out, StandardCharsets.UTF_8), new String(err, StandardCharsets.UTF_8));
    }

    /** A strict JSON reader (RFC 8259) for the test: objects, arrays, strings, numbers as Long or Double, booleans, null. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text) {
            Json j = new Json(text);
            Object v = j.value();
            j.space();
            if (j.i != text.length()) {
                throw j.error("text after the value");
            }
            return v;
        }

        private Object value() {
            space();
            if (i >= s.length()) {
                throw error("end of text where a value belongs");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{' -> {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    space();
                    if (peek('}')) {
                        return m;
                    }
                    do {
                        space();
                        String key = string();
                        space();
                        expect(':');
                        if (m.containsKey(key)) {
                            throw error("duplicate key " + key);
                        }
                        m.put(key, value());
                        space();
                    } while (peek(','));
                    expect('}');
                    return m;
                }
                case '[' -> {
                    i++;
                    List<Object> l = new ArrayList<>();
                    space();
                    if (peek(']')) {
                        return l;
                    }
                    do {
                        l.add(value());
                        space();
                    } while (peek(','));
                    expect(']');
                    return l;
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    if (s.startsWith("true", i)) {
                        i += 4;
                        return true;
                    }
                    if (s.startsWith("false", i)) {
                        i += 5;
                        return false;
                    }
                    if (s.startsWith("null", i)) {
                        i += 4;
                        return null;
                    }
                    return number();
                }
            }
        }

        private Object number() {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?")
                    .matcher(s).region(i, s.length());
            if (!m.lookingAt()) {
                throw error("not a value");
            }
            i = m.end();
            return m.group(2) == null && m.group(3) == null ? (Object) new java.math.BigInteger(m.group()).longValue()
                    : (Object) Double.parseDouble(m.group());
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c < 0x20) {
                    throw error("unescaped control character");
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> b.append(e);
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'u' -> {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> throw error("bad escape \\" + e);
                }
            }
        }

        private void space() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        private boolean peek(char c) {
            if (i < s.length() && s.charAt(i) == c) {
                i++;
                return true;
            }
            return false;
        }

        private void expect(char c) {
            if (!peek(c)) {
                throw error("expected '" + c + "'");
            }
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("invalid JSON at " + i + ": " + what);
        }
    }
}
