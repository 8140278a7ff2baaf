package org.rdmashuffle.verbs;

/**
 * What carries a shuffle's bytes, told apart wherever it is said (log lines, metrics, the doctor, the
 * benchmarks' "carried by" lines): a verbs device (RDMA: an HCA, or a software device the kernel runs such
 * as rxe or siw, named as such), the software provider (RC semantics over TCP inside the JVM: never RDMA),
 * or the host's own transport (Spark's or MapReduce's: the engine is not running, and a reason says why).
 * Users of earlier RDMA shuffles kept asking "is RDMA actually used?"; the answer must not depend on which
 * line one reads. Built for Java 17 (src/main/java17): the reports and the driver's metrics use it on any JVM.
 */
public enum Carrier {
    /** A verbs device through libibverbs: RDMA (an HCA, or a kernel software device such as rxe or siw). */
    DEVICE("device"),
    /** The software provider: RC semantics over one TCP connection per pair of devices, in the JVM. */
    SOFTWARE_PROVIDER("softwareProvider"),
    /** The host's own transport (Spark's or MapReduce's): the engine does not carry the shuffle. */
    HOST_TRANSPORT("hostTransport");

    /** The software provider's name ({@code VerbsProvider#name()}). */
    public static final String SOFTWARE_PROVIDER_NAME = "software";
    /** rxe's {@code vendor_id} (Linux, drivers/infiniband/sw/rxe/rxe_param.h: RXE_VENDOR_ID). */
    static final int RXE_VENDOR_ID = 0xFFFFFF;
    /** siw's {@code vendor_id} (Linux, drivers/infiniband/sw/siw/siw.h: SIW_VENDOR_ID). */
    static final int SIW_VENDOR_ID = 0x626d74;

    private final String key;

    Carrier(String key) {
        this.key = key;
    }

    /** E.g. {@code softwareProvider}: a name for metrics. */
    public String key() {
        return key;
    }

    /**
     * Its value of the {@code carrier} label in the Prometheus expositions (the driver's and the
     * NodeManager's, docs/metrics.md): {@code rdma_device}, {@code software_provider}, or the host's own
     * transport named after the host, {@code <host>_transport} (e.g. {@code spark_transport}).
     */
    public String label(String host) {
        return switch (this) {
            case DEVICE -> "rdma_device";
            case SOFTWARE_PROVIDER -> "software_provider";
            case HOST_TRANSPORT -> host + "_transport";
        };
    }

    /** The carrier of a running engine on the provider named {@code provider} ({@code ibverbs} or {@code software}). */
    public static Carrier ofProvider(String provider) {
        return SOFTWARE_PROVIDER_NAME.equals(provider) ? SOFTWARE_PROVIDER : DEVICE;
    }

    /**
     * Which kernel software device a verbs device is ({@code rxe}, {@code siw}), or "" for a hardware one:
     * by its vendor id, which the kernel drivers fix, else by the conventional name (a name is chosen by
     * whoever ran {@code rdma link add}, so it is the weaker sign).
     */
    public static String softwareDeviceKind(int vendorId, String deviceName) {
        if (vendorId == RXE_VENDOR_ID || deviceName.startsWith("rxe")) {
            return "rxe";
        }
        if (vendorId == SIW_VENDOR_ID || deviceName.startsWith("siw")) {
            return "siw";
        }
        return "";
    }

    /**
     * What carries an engine's shuffle, in words: {@code RDMA over device mlx5_0}, {@code RDMA over software
     * device rxe0 (rxe: RoCE done by the kernel, no RDMA NIC)}, or {@code the software provider (RC over TCP in
     * the JVM, not RDMA) on soft0}.
     *
     * @param softwareDevice {@link #softwareDeviceKind}'s answer for the device ("" for hardware)
     */
    public static String describe(String provider, String device, String softwareDevice) {
        if (ofProvider(provider) == SOFTWARE_PROVIDER) {
            return "the software provider (RC over TCP in the JVM, not RDMA) on " + device;
        }
        return softwareDevice == null || softwareDevice.isEmpty() ? "RDMA over device " + device
                : "RDMA over software device " + device + " (" + softwareDevice + ": "
                        + (softwareDevice.equals("siw") ? "iWARP" : "RoCE") + " done by the kernel, no RDMA NIC)";
    }

    /** What moved the blocks an engine fetched, for counts: {@code over RDMA} or {@code over the software provider}. */
    public static String over(String provider) {
        return ofProvider(provider) == SOFTWARE_PROVIDER ? "over the software provider (TCP)" : "over RDMA";
    }
}
