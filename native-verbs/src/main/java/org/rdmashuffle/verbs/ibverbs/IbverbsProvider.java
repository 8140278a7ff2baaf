package org.rdmashuffle.verbs.ibverbs;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.verbs.Availability;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.Trouble;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsException;

/**
 * The provider that drives real RDMA devices through libibverbs (rdma-core), by
 * {@code java.lang.foreign}. One instance per process ({@link #instance()}); the device list is read
 * once, on first use, and kept for the life of the process.
 */
public final class IbverbsProvider implements org.rdmashuffle.verbs.VerbsProvider {
    public static final String NAME = "ibverbs";
    /** System property: the smallest memlock limit (bytes) under which the provider reports itself unavailable. */
    public static final String MIN_MEMLOCK_PROPERTY = "rdmashuffle.verbs.minMemlockBytes";
    static final long DEFAULT_MIN_MEMLOCK = 64L << 20;

    private static final IbverbsProvider INSTANCE = new IbverbsProvider();

    private volatile List<VerbsDevice> devices;
    private volatile String deviceListFailure;
    private volatile Availability availability;

    private IbverbsProvider() {
    }

    public static IbverbsProvider instance() {
        return INSTANCE;
    }

    @Override
    public String name() {
        return NAME;
    }

    /**
     * Available when libibverbs loads, lists a device, one of its ports is ACTIVE and the memlock
     * limit allows registering memory. Computed once.
     */
    @Override
    public Availability availability() {
        Availability a = availability;
        if (a == null) {
            synchronized (this) {
                if (availability == null) {
                    availability = probe();
                }
                a = availability;
            }
        }
        return a;
    }

    private Availability probe() {
        return probe(System.getProperty("os.arch"));
    }

    /** {@link #availability()}'s finding on a JVM whose {@code os.arch} is {@code arch}; nothing is cached. */
    Availability probe(String arch) {
        String refusal = platformRefusal(arch);
        if (refusal != null) {
            return Availability.unavailable(refusal); // before libibverbs is touched: its structs would be misread
        }
        try {
            if (!Libibverbs.loaded()) {
                return assess(Libibverbs.LOAD_FAILURE, null, 0, List.of(), null, 0, 0, false, false, null);
            }
            List<VerbsDevice> list = devices();
            List<String> seen = new ArrayList<>();
            long memlock = memlockLimitBytes();
            long minMemlock = Long.getLong(MIN_MEMLOCK_PROPERTY, DEFAULT_MIN_MEMLOCK);
            boolean ipcLock = ipcLockEffective();
            String active = null;
            boolean onDemand = false;
            String onDemandFailure = null;
            boolean pageStartOnly = false;
            for (VerbsDevice d : list) {
                try (VerbsContext ctx = d.open()) {
                    int ports = ctx.queryDevice().physicalPortCount();
                    for (int p = 1; p <= ports && active == null; p++) {
                        PortAttributes port = ctx.queryPort(p);
                        seen.add(d.name() + " port " + p + " " + port.state());
                        if (port.isActive()) {
                            active = d.name() + " port " + p + " (" + port.linkLayer() + ", MTU " + port.activeMtu().bytes() + ")";
                            onDemand = ctx.queryDevice().supportsOnDemandPaging(DeviceAttributes.ODP_ENGINE_RC_CAPS);
                            if (onDemand && pinningLow(memlock, minMemlock, ipcLock)) { // relied on only then: check it gives every byte
                                org.rdmashuffle.verbs.OnDemandPagingCheck.Result check =
                                        org.rdmashuffle.verbs.OnDemandPagingCheck.check(ctx, p);
                                onDemandFailure = check.why();
                                pageStartOnly = check.pageStartOnly();
                            }
                        }
                    }
                } catch (VerbsException e) {
                    seen.add(d.name() + ": " + e.getMessage());
                }
                if (active != null) {
                    break;
                }
            }
            return assess(null, deviceListFailure, list.size(), seen, active, memlock, minMemlock, ipcLock, onDemand,
                    onDemandFailure, pageStartOnly);
        } catch (RuntimeException | LinkageError e) {
            return Availability.unavailable("probing libibverbs failed: " + e);
        }
    }

    /** The {@code os.arch} names of x86-64, the one architecture the ffi layouts are generated and checked on. */
    static final java.util.Set<String> CHECKED_ARCHITECTURES = java.util.Set.of("amd64", "x86_64");

    /**
     * Why this provider refuses to run on a JVM whose {@code os.arch} is {@code arch}, or null on x86-64.
     * The jextract layouts (org.rdmashuffle.verbs.ffi) are x86-64's: on another ABI, structs such as
     * {@code ibv_context} (which embeds a {@code pthread_mutex_t}, 40 bytes on x86-64 and 48 on aarch64)
     * lie differently, and reading them with these offsets would call through wrong pointers. Refused
     * until VerbsLayoutTest and the conformance suite have passed there.
     */
    static String platformRefusal(String arch) {
        String name = arch == null || arch.isBlank() ? "an architecture it does not name (os.arch is not set)" : arch.strip();
        if (CHECKED_ARCHITECTURES.contains(name.toLowerCase(java.util.Locale.ROOT))) {
            return null;
        }
        return Trouble.PLATFORM.line("the libibverbs provider's struct layouts are generated and checked on x86-64, and this JVM "
                        + "runs on " + name,
                "an x86-64 JVM (os.arch amd64 or x86_64) until those layouts are checked on " + name,
                "run the engine on x86-64 hosts; elsewhere provider=auto runs it on the software provider (RC over TCP), "
                        + "and with provider=ibverbs it does not start and the host's own shuffle carries the data "
                        + "(docs/providers.md, \"Platforms\")");
    }

    /** What to do when the device is meant to be Soft-RoCE and its module was never loaded. */
    static final String SOFT_ROCE_HINT = "Soft-RoCE: modprobe rdma_rxe, then rdma link add rxe0 type rxe netdev <interface>";

    /**
     * The verdict from what the probe found, in the order an operator fixes things: the library,
     * a device, an active port, the memlock limit. Separate from the probe so every cause is tested.
     *
     * @param memlock the soft memlock limit in bytes, -1 for unlimited
     * @param ipcLock whether CAP_IPC_LOCK is effective: the kernel then pins beyond the limit (a root
     *                process given the capability, as a container's may be; not a non-root one, for
     *                which an added capability is not effective)
     * @param onDemand whether the active port's device pages registered memory on demand (ODP) for
     *                 everything the engine registers: then a low limit does not stop it (nothing is pinned)
     * @param onDemandFailure what {@code OnDemandPagingCheck} found wrong with that paging (null: nothing, or not checked)
     */
    static Availability assess(String loadFailure, String deviceListFailure, int devices, List<String> portsSeen,
                               String activePort, long memlock, long minMemlock, boolean ipcLock, boolean onDemand,
                               String onDemandFailure) {
        return assess(loadFailure, deviceListFailure, devices, portsSeen, activePort, memlock, minMemlock, ipcLock, onDemand,
                onDemandFailure, false);
    }

    /**
     * As above; {@code pageStartOnly}: the device's paging gives every byte only for transfers that start
     * on page boundaries, which the engine then keeps to ({@code OnDemandPagingCheck.Result#pageStartOnly}).
     */
    static Availability assess(String loadFailure, String deviceListFailure, int devices, List<String> portsSeen,
                               String activePort, long memlock, long minMemlock, boolean ipcLock, boolean onDemand,
                               String onDemandFailure, boolean pageStartOnly) {
        if (loadFailure != null) {
            return Availability.unavailable(Trouble.NO_DEVICE.line(loadFailure, "libibverbs (rdma-core) to reach a device",
                    "install libibverbs1 and ibverbs-providers (rdma-core 44 or later)"));
        }
        if (devices == 0) {
            return Availability.unavailable(deviceListFailure != null
                    ? Trouble.NO_DEVICE.line(deviceListFailure, "the kernel's RDMA support (ib_uverbs) and a device",
                            "load the NIC's driver and ib_uverbs; " + SOFT_ROCE_HINT)
                    : Trouble.NO_DEVICE.line("libibverbs lists no RDMA device", "an HCA and the provider library for it",
                            "install ibverbs-providers (rdma-core) and the NIC's driver; " + SOFT_ROCE_HINT));
        }
        if (activePort == null) {
            return Availability.unavailable(Trouble.PORT_DOWN.line("no active port: " + String.join(", ", portsSeen),
                    "a port in state ACTIVE", "bring its link up (ip link set <netdev> up; the cable, the switch port; "
                            + "for rxe, the interface it was added on), or choose an active device and port"));
        }
        boolean low = pinningLow(memlock, minMemlock, ipcLock);
        if (low && onDemand && onDemandFailure == null) {
            return Availability.ok(activePort + "; memlock limit " + bytes(memlock) + ", below the " + bytes(minMemlock)
                    + " pinning needs: memory is registered on demand (ODP, the device has it) instead"
                    + (pageStartOnly ? ", every transfer starting on a page boundary (its paging gets others wrong)" : ""));
        }
        if (low) {
            return Availability.unavailable(Trouble.MEMLOCK.line("memlock limit is " + bytes(memlock),
                    bytes(minMemlock) + " to register memory" + (onDemandFailure != null ? " (on-demand paging, which "
                            + "would need no pinning, is not usable: " + onDemandFailure + ")" : ""),
                    "raise it (ulimit -l, LimitMEMLOCK= in systemd, /etc/security/limits.conf, --ulimit memlock=-1 for "
                            + "containers; on Kubernetes the node's container runtime's LimitMEMLOCK, docs/kubernetes.md), "
                            + "or run as root with CAP_IPC_LOCK"));
        }
        return Availability.ok(activePort);
    }

    /** CAP_IPC_LOCK's bit in /proc's capability masks (linux/capability.h). */
    private static final int CAP_IPC_LOCK = 14;

    /** Whether this process's effective capabilities hold CAP_IPC_LOCK (read from /proc/self/status). */
    public static boolean ipcLockEffective() {
        try {
            return ipcLockEffective(java.nio.file.Files.readString(java.nio.file.Path.of("/proc/self/status")));
        } catch (java.io.IOException | RuntimeException e) {
            return false; // not Linux, or no /proc: the memlock limit alone decides
        }
    }

    /** CAP_IPC_LOCK in the {@code CapEff:} line (hex) of a /proc/PID/status text. */
    static boolean ipcLockEffective(String procStatus) {
        for (String line : procStatus.split("\n")) {
            if (line.startsWith("CapEff:")) {
                return (Long.parseUnsignedLong(line.substring("CapEff:".length()).strip(), 16) >>> CAP_IPC_LOCK & 1) != 0;
            }
        }
        return false;
    }

    /** Whether pinning is limited below what the provider needs: the limit is under it and CAP_IPC_LOCK does not lift it. */
    private static boolean pinningLow(long memlock, long minMemlock, boolean ipcLock) {
        return memlock != Libc.UNLIMITED && Long.compareUnsigned(memlock, minMemlock) < 0 && !ipcLock;
    }

    @Override
    public long pinnableBytes() {
        return ipcLockEffective() ? -1 : memlockLimitBytes();
    }

    /** The soft RLIMIT_MEMLOCK in bytes, or -1 for unlimited. */
    public long memlockLimitBytes() {
        return Libc.memlockLimit();
    }

    /** Human form of a memlock limit as {@link #memlockLimitBytes()} returns it. */
    public static String bytes(long n) {
        return org.rdmashuffle.verbs.Sizes.describe(n);
    }

    /** Why the device list is empty, when libibverbs said (e.g. ENOSYS: the kernel has no RDMA support). */
    public String deviceListFailure() {
        devices();
        return deviceListFailure;
    }

    @Override
    public List<VerbsDevice> devices() {
        List<VerbsDevice> d = devices;
        if (d == null) {
            synchronized (this) {
                if (devices == null) {
                    devices = readDeviceList();
                }
                d = devices;
            }
        }
        return d;
    }

    private List<VerbsDevice> readDeviceList() {
        String refusal = platformRefusal(System.getProperty("os.arch"));
        if (refusal != null) { // no device is opened through layouts of another architecture
            deviceListFailure = refusal;
            return List.of();
        }
        if (!Libibverbs.loaded()) {
            deviceListFailure = Libibverbs.LOAD_FAILURE;
            return List.of();
        }
        MemorySegment list;
        int count;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment num = arena.allocate(ValueLayout.JAVA_INT);
            try {
                list = Libibverbs.GET_DEVICE_LIST.pointer(num);
            } catch (VerbsException e) {
                deviceListFailure = e.getMessage() + (e.errno() == Errno.ENOSYS
                        ? " (the kernel has no RDMA (uverbs) support, or no RDMA device is present)" : "");
                return List.of();
            }
            count = num.get(ValueLayout.JAVA_INT, 0);
        }
        // The array stays allocated for the life of the process: IbvDevice keeps pointers into it,
        // and ibv_open_device needs them. It is a few pointers.
        MemorySegment array = list.reinterpret((count + 1L) * ValueLayout.ADDRESS.byteSize());
        List<VerbsDevice> result = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            MemorySegment dev = array.getAtIndex(ValueLayout.ADDRESS, i);
            MemorySegment namePtr = (MemorySegment) Libibverbs.GET_DEVICE_NAME.plain(dev);
            String name = namePtr.reinterpret(256).getString(0);
            long guid = Long.reverseBytes((long) Libibverbs.GET_DEVICE_GUID.plain(dev));
            result.add(new IbvDevice(dev, name, guid));
        }
        return List.copyOf(result);
    }

    @Override
    public String toString() {
        return NAME;
    }
}
