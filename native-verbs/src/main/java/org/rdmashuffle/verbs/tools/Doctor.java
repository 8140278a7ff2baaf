package org.rdmashuffle.verbs.tools;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.rdmashuffle.verbs.Carrier;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.GidEntry;
import org.rdmashuffle.verbs.OnDemandPagingCheck;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.ibverbs.IbverbsProvider;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * {@code bin/doctor [--json] [provider [address]]} (or {@code java -jar} with this main class): what an operator
 * needs to debug a fabric before blaming the shuffle. The first line is the verdict: which provider
 * the plugin would use and why. Then the detail: devices, ports, link layer, MTU, GIDs and their types
 * and the one queue pairs would use for peers reaching this host at {@code address} (and why),
 * on-demand paging, queue limits, the memlock limit and the software provider. {@code --json} prints
 * the same facts as one JSON object. Exits 0 when a provider is usable, 1 otherwise, 2 for a usage
 * error.
 */
public final class Doctor {
    static final String USAGE = """
            usage: bin/doctor [--json] [auto|ibverbs|software [ADDRESS]]
                   (or java -jar on a jar whose main class is the doctor, with the same arguments)

            Prints which verbs provider rdma-shuffle would use and why (first line), then what it sees of
            this machine: devices, ports, GIDs, on-demand paging, queue limits, the memlock limit and the
            software provider.

              auto|ibverbs|software  the provider setting to judge (spark.shuffle.rdma.provider); default auto
              ADDRESS                where peers reach this host (the engine's bindAddress): each port then
                                     names the GID queue pairs would use for it
              --json                 the same facts as one JSON object
              -h, --help             this text

            Exit status: 0 when a provider is usable, 1 when none is, 2 for a usage error.
            """;

    /** What the command line asked for. */
    record Invocation(boolean help, boolean json, String choice, InetAddress address) {
        /** Parses the doctor's arguments; a bad one is an IllegalArgumentException naming it. */
        static Invocation parse(String... args) {
            boolean help = false;
            boolean json = false;
            List<String> positional = new ArrayList<>();
            for (String a : args) {
                switch (a) {
                    case "-h", "--help" -> help = true;
                    case "--json" -> json = true;
                    default -> {
                        if (a.startsWith("-")) {
                            throw new IllegalArgumentException("unknown option '" + a + "' (options: --json, --help)");
                        }
                        positional.add(a);
                    }
                }
            }
            if (help) {
                return new Invocation(true, json, Verbs.AUTO, null);
            }
            if (positional.size() > 2) {
                throw new IllegalArgumentException("too many arguments: '" + String.join(" ", positional)
                        + "' (give a provider and at most one ADDRESS)");
            }
            String choice = positional.isEmpty() ? Verbs.AUTO : positional.get(0);
            List<String> known = List.of(Verbs.AUTO, IbverbsProvider.NAME, SoftwareProvider.NAME);
            if (!known.contains(choice.trim().toLowerCase(Locale.ROOT))) {
                throw new IllegalArgumentException("unknown provider '" + choice + "' (known: " + String.join(", ", known) + ")");
            }
            InetAddress address = null;
            if (positional.size() > 1) {
                try {
                    address = InetAddress.getByName(positional.get(1));
                } catch (UnknownHostException e) {
                    throw new IllegalArgumentException("ADDRESS '" + positional.get(1) + "' is not an address this host resolves");
                }
            }
            return new Invocation(false, json, choice, address);
        }
    }

    /** The verdict, the detail as text, and the same facts as a JSON object's members. */
    record Findings(boolean usable, String verdict, String text, Map<String, Object> json) {
    }

    private final PrintWriter out;
    /** Where peers reach this host (the engine's bindAddress); null: no preference. */
    private final InetAddress address;

    private Doctor(PrintWriter out, InetAddress address) {
        this.out = out;
        this.address = address;
    }

    public static void main(String[] args) {
        Invocation invocation;
        try {
            invocation = Invocation.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("doctor: " + e.getMessage() + "; --help for usage");
            System.exit(2);
            return;
        }
        if (invocation.help()) {
            System.out.print(USAGE);
            System.exit(0);
        }
        Findings f = examine(invocation.choice(), invocation.address());
        System.out.print(invocation.json() ? json(f.json()) + "\n" : f.text());
        System.out.flush();
        System.exit(f.usable() ? 0 : 1);
    }

    /** Prints the report for provider {@code choice}, verdict first; true when a provider is usable. */
    public static boolean report(String choice, PrintStream out) {
        Findings f = examine(choice, null);
        out.print(f.text());
        out.flush();
        return f.usable();
    }

    /** Looks at the machine once and describes it both ways, so the text and the JSON carry the same facts. */
    static Findings examine(String choice, InetAddress address) {
        StringWriter detail = new StringWriter();
        Doctor d = new Doctor(new PrintWriter(detail), address);
        Map<String, Object> facts = d.detail();
        d.out.flush();
        Verbs.Selection s = Verbs.select(choice);
        Carrier carrier = s.provider() == null ? Carrier.HOST_TRANSPORT : Carrier.ofProvider(s.provider().name());
        String verdict = "verdict: " + switch (carrier) {
            case DEVICE -> s.provider().name() + " (RDMA over a verbs device)";
            case SOFTWARE_PROVIDER -> s.provider().name() + " (the software provider: RC over TCP in the JVM, not RDMA)";
            case HOST_TRANSPORT -> "no usable provider (the engine does not start: Spark's or MapReduce's own transport "
                    + "carries the shuffle)";
        } + " -- " + s.reason();
        Map<String, Object> json = new LinkedHashMap<>();
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("choice", choice);
        v.put("provider", s.provider() != null ? s.provider().name() : null);
        v.put("usable", s.provider() != null);
        v.put("carrier", carrier.key());
        v.put("reason", s.reason());
        json.put("verdict", v);
        json.putAll(facts);
        return new Findings(s.provider() != null, verdict, verdict + "\n\n" + detail, json);
    }

    /** Prints the detail and returns it as JSON members: java, memlock, ibverbs, software. */
    private Map<String, Object> detail() {
        Map<String, Object> facts = new LinkedHashMap<>();
        IbverbsProvider ibv = IbverbsProvider.instance();
        out.println("rdma-shuffle doctor");
        out.println("java: " + Runtime.version() + " (" + System.getProperty("java.vm.vendor") + ")");
        facts.put("java", object("version", Runtime.version().toString(), "vendor", System.getProperty("java.vm.vendor")));
        long memlock = ibv.memlockLimitBytes();
        boolean ipcLock = IbverbsProvider.ipcLockEffective();
        out.println("memlock limit (ulimit -l): " + IbverbsProvider.bytes(memlock)
                + (ipcLock ? " (CAP_IPC_LOCK is effective: the kernel pins beyond it)" : ""));
        facts.put("memlock", object("limitBytes", memlock < 0 ? null : memlock, "limit", IbverbsProvider.bytes(memlock),
                "ipcLockEffective", ipcLock));
        out.println();

        Map<String, Object> ibverbs = new LinkedHashMap<>();
        out.println("ibverbs provider (libibverbs.so.1)");
        if (ibv.devices().isEmpty()) {
            out.println("  devices: none -- " + (ibv.deviceListFailure() != null ? ibv.deviceListFailure()
                    : "libibverbs lists no device"));
        }
        ibverbs.put("deviceListFailure", ibv.deviceListFailure());
        List<Object> devices = new ArrayList<>();
        for (VerbsDevice dev : ibv.devices()) {
            devices.add(device(dev));
        }
        ibverbs.put("devices", devices);
        out.println("  availability: " + (ibv.isAvailable() ? "usable -- " + ibv.availability().cause()
                : "unavailable -- " + ibv.unavailabilityCause()));
        ibverbs.put("available", ibv.isAvailable());
        ibverbs.put("cause", ibv.isAvailable() ? ibv.availability().cause() : ibv.unavailabilityCause());
        facts.put("ibverbs", ibverbs);
        out.println();

        SoftwareProvider soft = SoftwareProvider.instance();
        out.println("software provider (RC over TCP, no RDMA hardware needed)");
        out.println("  availability: " + (soft.isAvailable() ? "usable -- " + soft.availability().cause()
                : "unavailable -- " + soft.unavailabilityCause()));
        facts.put("software", object("available", soft.isAvailable(),
                "cause", soft.isAvailable() ? soft.availability().cause() : soft.unavailabilityCause()));
        return facts;
    }

    /** The text and JSON of one device, for a test that has no RDMA device (the software provider's serves). */
    static Findings describeDevice(VerbsDevice device) {
        StringWriter text = new StringWriter();
        Doctor d = new Doctor(new PrintWriter(text), null);
        Map<String, Object> json = d.device(device);
        d.out.flush();
        return new Findings(true, "", text.toString(), json);
    }

    private Map<String, Object> device(VerbsDevice d) {
        Map<String, Object> j = new LinkedHashMap<>();
        out.println("  device " + d.name() + "  node GUID " + guid(d.guid()));
        j.put("name", d.name());
        j.put("nodeGuid", guid(d.guid()));
        try (VerbsContext ctx = d.open()) {
            DeviceAttributes a = ctx.queryDevice();
            out.printf("    firmware %s, vendor 0x%x part %d hw %d%n", a.firmwareVersion(), a.vendorId(), a.vendorPartId(),
                    a.hardwareVersion());
            j.put("firmware", a.firmwareVersion());
            j.put("vendorId", a.vendorId());
            j.put("vendorPartId", a.vendorPartId());
            j.put("hardwareVersion", a.hardwareVersion());
            out.printf("    max QP %d, max QP WR %d, max SGE %d (RDMA read %d), max CQ %d x %d entries%n",
                    a.maxQp(), a.maxQpWr(), a.maxSge(), a.maxSgeRd(), a.maxCq(), a.maxCqe());
            out.printf("    max SRQ %d, max SRQ WR %d, max SRQ SGE %d, max MR %d, max MR size %s%n",
                    a.maxSrq(), a.maxSrqWr(), a.maxSrqSge(), a.maxMr(), Long.toUnsignedString(a.maxMrSize()));
            out.printf("    outstanding RDMA reads per QP %d (initiator %d), atomics %s%n",
                    a.maxQpRdAtomic(), a.maxQpInitRdAtomic(), a.atomicCapability());
            j.put("limits", object("maxQp", a.maxQp(), "maxQpWr", a.maxQpWr(), "maxSge", a.maxSge(), "maxSgeRead", a.maxSgeRd(),
                    "maxCq", a.maxCq(), "maxCqe", a.maxCqe(), "maxSrq", a.maxSrq(), "maxSrqWr", a.maxSrqWr(),
                    "maxSrqSge", a.maxSrqSge(), "maxMr", a.maxMr(), "maxMrSize", new BigInteger(Long.toUnsignedString(a.maxMrSize())),
                    "maxQpReadAtomic", a.maxQpRdAtomic(), "maxQpInitiatorReadAtomic", a.maxQpInitRdAtomic()));
            j.put("atomics", a.atomicCapability().toString());
            boolean odpForEngine = a.supportsOnDemandPaging(DeviceAttributes.ODP_ENGINE_RC_CAPS);
            out.printf("    on-demand paging: %s (general caps 0x%x, RC caps 0x%x); for all the shuffle engine registers: %s%n",
                    a.supportsOnDemandPaging() ? "yes" : "no", a.odpGeneralCaps(), a.odpRcCaps(),
                    odpForEngine ? "yes (onDemandPaging=auto uses it under a memlock limit below what the engine may register)"
                            : "no (the engine pins)");
            Map<String, Object> odp = object("supported", a.supportsOnDemandPaging(), "generalCaps", a.odpGeneralCaps(),
                    "rcCaps", a.odpRcCaps(), "coversEngine", odpForEngine, "check", null);
            j.put("onDemandPaging", odp);
            out.printf("    memory windows: %s; FLUSH: %s; atomic write: %s (device caps 0x%x, extended 0x%x)%n",
                    a.supportsMemoryWindows() ? "type 1" + (a.memoryWindowType2() != null ? " and " + a.memoryWindowType2() : "")
                            + ", at most " + a.maxMw() : "no",
                    a.supportsFlush() ? "yes" : "no", a.supportsAtomicWrite() ? "yes" : "no", a.deviceCapFlags(),
                    a.deviceCapFlagsEx());
            j.put("memoryWindows", object("type1", a.supportsMemoryWindows(), "type2", a.memoryWindowType2(),
                    "max", a.supportsMemoryWindows() ? a.maxMw() : 0));
            j.put("flush", a.supportsFlush());
            j.put("atomicWrite", a.supportsAtomicWrite());
            j.put("deviceCapFlags", a.deviceCapFlags());
            j.put("deviceCapFlagsEx", a.deviceCapFlagsEx());
            List<Object> ports = new ArrayList<>();
            j.put("ports", ports);
            int active = -1;
            for (int p = 1; p <= a.physicalPortCount(); p++) {
                PortAttributes port = ctx.queryPort(p);
                ports.add(port(ctx, port));
                if (active < 0 && port.isActive()) {
                    active = p;
                }
            }
            if (active > 0 && odpForEngine) {
                // The capability bits are not the whole story (rxe in Linux 7.2): the data check the engine runs.
                OnDemandPagingCheck.Result check = OnDemandPagingCheck.check(ctx, active);
                String verdict = check.failure() == null ? "any offset" : check.pageStartOnly() ? "page boundaries only" : "fails";
                out.println("    on-demand paging's data check (port " + active + "): " + (check.failure() == null
                        ? "every byte, at any offset"
                        : check.pageStartOnly() ? "every byte only for transfers from page boundaries: the engine reads so "
                                + "(pageAlignedReads) -- " + check.failure()
                        : "fails, on-demand paging is not used -- " + check.why()));
                odp.put("check", object("port", active, "result", verdict, "failure", check.failure(),
                        "pageStartFailure", check.pageStartFailure()));
            }
        } catch (VerbsException e) {
            out.println("    cannot query: " + e.getMessage());
            j.put("error", e.getMessage());
        }
        return j;
    }

    private Map<String, Object> port(VerbsContext ctx, PortAttributes p) {
        out.printf("    port %d: %s (%s), link layer %s, MTU active %d / max %d, LID %d, width %d speed %d%n",
                p.portNumber(), p.state(), p.physicalStateName(), p.linkLayer(), p.activeMtu().bytes(),
                p.maxMtu().bytes(), p.lid(), p.activeWidth(), p.activeSpeed());
        Map<String, Object> j = object("number", p.portNumber(), "state", String.valueOf(p.state()),
                "physicalState", p.physicalStateName(), "linkLayer", String.valueOf(p.linkLayer()),
                "activeMtu", p.activeMtu().bytes(), "maxMtu", p.maxMtu().bytes(), "lid", p.lid(),
                "activeWidth", p.activeWidth(), "activeSpeed", p.activeSpeed());
        List<Object> gids = new ArrayList<>();
        j.put("gids", gids);
        int shown = 0;
        for (int i = 0; i < p.gidTableLength(); i++) {
            GidEntry g;
            try {
                g = ctx.queryGid(p.portNumber(), i);
            } catch (VerbsException e) {
                out.println("      GID[" + i + "]: " + e.getMessage());
                gids.add(object("index", i, "error", e.getMessage()));
                continue;
            }
            if (g != null) {
                out.printf("      GID[%d] %-40s %s%s%n", i, g.gid(), g.type(), g.gid().isIpv4Mapped() ? " (IPv4)" : "");
                gids.add(object("index", i, "gid", g.gid().toString(), "type", String.valueOf(g.type()),
                        "ipv4", g.gid().isIpv4Mapped()));
                shown++;
            }
        }
        if (shown == 0) {
            out.println("      no GIDs");
        }
        try {
            GidChoice c = GidChoice.choose(ctx, p, address);
            out.println("      queue pairs would use " + (c.index() < 0 ? "the LID" : "GID[" + c.index() + "] " + c.gid())
                    + ": " + c.reason() + (address == null ? " (give the address peers reach this host at as the "
                    + "second argument to prefer its GID)" : ""));
            j.put("queuePairsUse", object("gidIndex", c.index() < 0 ? null : c.index(),
                    "gid", c.index() < 0 ? null : String.valueOf(c.gid()), "reason", c.reason()));
        } catch (IllegalStateException e) {
            out.println("      no usable GID: " + e.getMessage());
            j.put("queuePairsUse", object("gidIndex", null, "gid", null, "reason", "no usable GID: " + e.getMessage()));
        }
        return j;
    }

    private static String guid(long guid) {
        String hex = HexFormat.of().toHexDigits(guid);
        return hex.substring(0, 4) + ":" + hex.substring(4, 8) + ":" + hex.substring(8, 12) + ":" + hex.substring(12);
    }

    /** An ordered JSON object from name, value pairs. */
    private static Map<String, Object> object(Object... namesAndValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            m.put((String) namesAndValues[i], namesAndValues[i + 1]);
        }
        return m;
    }

    /**
     * {@code value} as JSON, two spaces per level: maps are objects, lists arrays, numbers and
     * booleans themselves, null null, anything else its string.
     */
    static String json(Object value) {
        StringBuilder b = new StringBuilder();
        json(value, b, "");
        return b.toString();
    }

    private static void json(Object value, StringBuilder b, String indent) {
        if (value == null) {
            b.append("null");
        } else if (value instanceof Boolean || value instanceof Integer || value instanceof Long || value instanceof BigInteger) {
            b.append(value);
        } else if (value instanceof Map<?, ?> m) {
            if (m.isEmpty()) {
                b.append("{}");
                return;
            }
            String inner = indent + "  ";
            b.append("{\n");
            int i = 0;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                b.append(inner);
                string(String.valueOf(e.getKey()), b);
                b.append(": ");
                json(e.getValue(), b, inner);
                b.append(++i < m.size() ? ",\n" : "\n");
            }
            b.append(indent).append('}');
        } else if (value instanceof List<?> l) {
            if (l.isEmpty()) {
                b.append("[]");
                return;
            }
            String inner = indent + "  ";
            b.append("[\n");
            for (int i = 0; i < l.size(); i++) {
                b.append(inner);
                json(l.get(i), b, inner);
                b.append(i + 1 < l.size() ? ",\n" : "\n");
            }
            b.append(indent).append(']');
        } else {
            string(value.toString(), b);
        }
    }

    /** A JSON string: quotes, backslashes and control characters escaped (RFC 8259), the rest as is. */
    private static void string(String s, StringBuilder b) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case '\b' -> b.append("\\b");
                case '\f' -> b.append("\\f");
                default -> {
                    if (c < 0x20 || c == '\u2028' || c == '\u2029') {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }
}
