package org.rdmashuffle.verbs;

/**
 * What {@code ibv_query_device_ex} reports about a device: limits the engine sizes its queues by,
 * the on-demand-paging capability, and the capability bits of the features newer kernels add (memory
 * windows, FLUSH, atomic write: docs/native-verbs.md, "Kernels and what their rxe offers").
 */
public record DeviceAttributes(
        String firmwareVersion,
        long nodeGuid,
        int vendorId,
        int vendorPartId,
        int hardwareVersion,
        long maxMrSize,
        int maxQp,
        int maxQpWr,
        int maxSge,
        int maxSgeRd,
        int maxCq,
        int maxCqe,
        int maxMr,
        int maxPd,
        int maxQpRdAtomic,
        int maxQpInitRdAtomic,
        AtomicCapability atomicCapability,
        int maxSrq,
        int maxSrqWr,
        int maxSrqSge,
        int physicalPortCount,
        long odpGeneralCaps,
        int odpRcCaps,
        int deviceCapFlags,
        long deviceCapFlagsEx,
        int maxMw) {

    /** {@code IBV_DEVICE_MEM_WINDOW} in {@code device_cap_flags}: type 1 memory windows. */
    public static final int DEVICE_MEM_WINDOW = 1 << 17;
    /** {@code IBV_DEVICE_MEM_WINDOW_TYPE_2A}: type 2 windows bound to a QP, invalidated by rkey alone. */
    public static final int DEVICE_MEM_WINDOW_TYPE_2A = 1 << 23;
    /** {@code IBV_DEVICE_MEM_WINDOW_TYPE_2B}: type 2 windows bound to a QP, invalidated by QP and rkey. */
    public static final int DEVICE_MEM_WINDOW_TYPE_2B = 1 << 24;
    /** {@code IB_UVERBS_DEVICE_FLUSH_GLOBAL} in {@code device_cap_flags_ex}. */
    public static final long DEVICE_FLUSH_GLOBAL = 1L << 38;
    /** {@code IB_UVERBS_DEVICE_FLUSH_PERSISTENT} in {@code device_cap_flags_ex}. */
    public static final long DEVICE_FLUSH_PERSISTENT = 1L << 39;
    /** {@code IB_UVERBS_DEVICE_ATOMIC_WRITE} in {@code device_cap_flags_ex}. */
    public static final long DEVICE_ATOMIC_WRITE = 1L << 40;

    /** {@code IBV_ODP_SUPPORT} in {@code odp_caps.general_caps}. */
    public static final long ODP_SUPPORT = 1;
    /** {@code IBV_ODP_SUPPORT_SEND} in {@code odp_caps.per_transport_caps.rc_odp_caps}. */
    public static final int ODP_SUPPORT_SEND = 1;
    /** {@code IBV_ODP_SUPPORT_RECV}. */
    public static final int ODP_SUPPORT_RECV = 1 << 1;
    /** {@code IBV_ODP_SUPPORT_READ}. */
    public static final int ODP_SUPPORT_READ = 1 << 3;
    /** {@code IBV_ODP_SUPPORT_SRQ_RECV}. */
    public static final int ODP_SUPPORT_SRQ_RECV = 1 << 5;
    /**
     * What the shuffle engine registers on demand needs on RC: map outputs read by peers, fetch buffers
     * read into, metadata sent from and received into buffers of a shared receive queue.
     */
    public static final int ODP_ENGINE_RC_CAPS = ODP_SUPPORT_SEND | ODP_SUPPORT_RECV | ODP_SUPPORT_READ | ODP_SUPPORT_SRQ_RECV;

    /** {@code enum ibv_atomic_cap}. */
    public enum AtomicCapability { NONE, HCA, GLOB, UNKNOWN;
        public static AtomicCapability of(int code) {
            return code >= 0 && code < UNKNOWN.ordinal() ? values()[code] : UNKNOWN;
        }
    }

    /** True when memory regions may be registered with {@link Access#ON_DEMAND} for RC reads. */
    public boolean supportsOnDemandPaging() {
        return supportsOnDemandPaging(ODP_SUPPORT_READ);
    }

    /** True when on-demand regions work on RC for every operation in {@code rcCaps} ({@code ODP_SUPPORT_*} bits). */
    public boolean supportsOnDemandPaging(int rcCaps) {
        return (odpGeneralCaps & ODP_SUPPORT) != 0 && (odpRcCaps & rcCaps) == rcCaps;
    }

    /** Memory windows of type 1 (bound by {@code ibv_bind_mw}), with {@link #maxMw} of them. */
    public boolean supportsMemoryWindows() {
        return (deviceCapFlags & DEVICE_MEM_WINDOW) != 0 && maxMw > 0;
    }

    /** Type 2 memory windows (bound to one QP by a posted bind): "2A", "2B", or null. */
    public String memoryWindowType2() {
        return (deviceCapFlags & DEVICE_MEM_WINDOW_TYPE_2B) != 0 ? "2B"
                : (deviceCapFlags & DEVICE_MEM_WINDOW_TYPE_2A) != 0 ? "2A" : null;
    }

    /** The FLUSH operation (to global visibility or persistence). */
    public boolean supportsFlush() {
        return (deviceCapFlagsEx & (DEVICE_FLUSH_GLOBAL | DEVICE_FLUSH_PERSISTENT)) != 0;
    }

    public boolean supportsAtomicWrite() {
        return (deviceCapFlagsEx & DEVICE_ATOMIC_WRITE) != 0;
    }

    public boolean supportsAtomics() {
        return atomicCapability == AtomicCapability.HCA || atomicCapability == AtomicCapability.GLOB;
    }
}
