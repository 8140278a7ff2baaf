package org.rdmashuffle.verbs.tools;

import java.io.PrintStream;
import java.util.HexFormat;

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
 * {@code java -jar rdma-shuffle-native-verbs.jar [provider [address]]}: what an operator needs to
 * debug a fabric before blaming the shuffle -- devices, ports, link layer, MTU, GIDs and their types
 * and the one queue pairs would use for peers reaching this host at {@code address} (and why),
 * on-demand paging, queue limits, the memlock limit, the software provider, and which provider the
 * plugin would choose and why. Exits 0 when a provider is usable, 1 otherwise.
 */
public final class Doctor {
    private final PrintStream out;
    /** Where peers reach this host (the engine's bindAddress); null: no preference. */
    private final java.net.InetAddress address;

    private Doctor(PrintStream out, java.net.InetAddress address) {
        this.out = out;
        this.address = address;
    }

    public static void main(String[] args) throws java.net.UnknownHostException {
        String choice = args.length > 0 ? args[0] : Verbs.AUTO;
        java.net.InetAddress address = args.length > 1 ? java.net.InetAddress.getByName(args[1]) : null;
        System.exit(new Doctor(System.out, address).report(choice) ? 0 : 1);
    }

    /** Prints the report for provider {@code choice}; true when a provider is usable. */
    public static boolean report(String choice, PrintStream out) {
        return new Doctor(out, null).report(choice);
    }

    private boolean report(String choice) {
        IbverbsProvider ibv = IbverbsProvider.instance();
        out.println("rdma-shuffle doctor");
        out.println("java: " + Runtime.version() + " (" + System.getProperty("java.vm.vendor") + ")");
        long memlock = ibv.memlockLimitBytes();
        out.println("memlock limit (ulimit -l): " + IbverbsProvider.bytes(memlock)
                + (IbverbsProvider.ipcLockEffective() ? " (CAP_IPC_LOCK is effective: the kernel pins beyond it)" : ""));
        out.println();
        out.println("ibverbs provider (libibverbs.so.1)");
        if (ibv.devices().isEmpty()) {
            out.println("  devices: none -- " + (ibv.deviceListFailure() != null ? ibv.deviceListFailure()
                    : "libibverbs lists no device"));
        }
        for (VerbsDevice d : ibv.devices()) {
            device(d);
        }
        out.println("  availability: " + (ibv.isAvailable() ? "usable -- " + ibv.availability().cause()
                : "unavailable -- " + ibv.unavailabilityCause()));
        out.println();
        SoftwareProvider soft = SoftwareProvider.instance();
        out.println("software provider (RC over TCP, no RDMA hardware needed)");
        out.println("  availability: " + (soft.isAvailable() ? "usable -- " + soft.availability().cause()
                : "unavailable -- " + soft.unavailabilityCause()));
        out.println();
        Verbs.Selection s = Verbs.select(choice);
        out.println("provider choice (" + choice + "): " + (s.provider() != null ? s.provider().name() : "none"));
        out.println("  why: " + s.reason());
        return s.provider() != null;
    }

    private void device(VerbsDevice d) {
        out.println("  device " + d.name() + "  node GUID " + guid(d.guid()));
        try (VerbsContext ctx = d.open()) {
            DeviceAttributes a = ctx.queryDevice();
            out.printf("    firmware %s, vendor 0x%x part %d hw %d%n", a.firmwareVersion(), a.vendorId(), a.vendorPartId(),
                    a.hardwareVersion());
            out.printf("    max QP %d, max QP WR %d, max SGE %d (RDMA read %d), max CQ %d x %d entries%n",
                    a.maxQp(), a.maxQpWr(), a.maxSge(), a.maxSgeRd(), a.maxCq(), a.maxCqe());
            out.printf("    max SRQ %d, max SRQ WR %d, max SRQ SGE %d, max MR %d, max MR size %s%n",
                    a.maxSrq(), a.maxSrqWr(), a.maxSrqSge(), a.maxMr(), Long.toUnsignedString(a.maxMrSize()));
            out.printf("    outstanding RDMA reads per QP %d (initiator %d), atomics %s%n",
                    a.maxQpRdAtomic(), a.maxQpInitRdAtomic(), a.atomicCapability());
            out.printf("    on-demand paging: %s (general caps 0x%x, RC caps 0x%x); for all the shuffle engine registers: %s%n",
                    a.supportsOnDemandPaging() ? "yes" : "no", a.odpGeneralCaps(), a.odpRcCaps(),
                    a.supportsOnDemandPaging(DeviceAttributes.ODP_ENGINE_RC_CAPS)
                            ? "yes (onDemandPaging=auto uses it under a memlock limit below what the engine may register)"
                            : "no (the engine pins)");
            out.printf("    memory windows: %s; FLUSH: %s; atomic write: %s (device caps 0x%x, extended 0x%x)%n",
                    a.supportsMemoryWindows() ? "type 1" + (a.memoryWindowType2() != null ? " and " + a.memoryWindowType2() : "")
                            + ", at most " + a.maxMw() : "no",
                    a.supportsFlush() ? "yes" : "no", a.supportsAtomicWrite() ? "yes" : "no", a.deviceCapFlags(),
                    a.deviceCapFlagsEx());
            int active = -1;
            for (int p = 1; p <= a.physicalPortCount(); p++) {
                PortAttributes port = ctx.queryPort(p);
                port(ctx, port);
                if (active < 0 && port.isActive()) {
                    active = p;
                }
            }
            if (active > 0 && a.supportsOnDemandPaging(DeviceAttributes.ODP_ENGINE_RC_CAPS)) {
                // The capability bits are not the whole story (rxe in Linux 7.2): the data check the engine runs.
                OnDemandPagingCheck.Result check = OnDemandPagingCheck.check(ctx, active);
                out.println("    on-demand paging's data check (port " + active + "): " + (check.failure() == null
                        ? "every byte, at any offset"
                        : check.pageStartOnly() ? "every byte only for transfers from page boundaries: the engine reads so "
                                + "(pageAlignedReads) -- " + check.failure()
                        : "fails, on-demand paging is not used -- " + check.why()));
            }
        } catch (VerbsException e) {
            out.println("    cannot query: " + e.getMessage());
        }
    }

    private void port(VerbsContext ctx, PortAttributes p) {
        out.printf("    port %d: %s (%s), link layer %s, MTU active %d / max %d, LID %d, width %d speed %d%n",
                p.portNumber(), p.state(), p.physicalStateName(), p.linkLayer(), p.activeMtu().bytes(),
                p.maxMtu().bytes(), p.lid(), p.activeWidth(), p.activeSpeed());
        int shown = 0;
        for (int i = 0; i < p.gidTableLength(); i++) {
            GidEntry g;
            try {
                g = ctx.queryGid(p.portNumber(), i);
            } catch (VerbsException e) {
                out.println("      GID[" + i + "]: " + e.getMessage());
                continue;
            }
            if (g != null) {
                out.printf("      GID[%d] %-40s %s%s%n", i, g.gid(), g.type(), g.gid().isIpv4Mapped() ? " (IPv4)" : "");
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
        } catch (IllegalStateException e) {
            out.println("      no usable GID: " + e.getMessage());
        }
    }

    private static String guid(long guid) {
        String hex = HexFormat.of().toHexDigits(guid);
        return hex.substring(0, 4) + ":" + hex.substring(4, 8) + ":" + hex.substring(8, 12) + ":" + hex.substring(12);
    }
}
