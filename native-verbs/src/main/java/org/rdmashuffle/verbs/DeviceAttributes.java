package org.rdmashuffle.verbs;

/**
 * What {@code ibv_query_device_ex} reports about a device: limits the engine sizes its queues by,
 * and the on-demand-paging capability.
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
        int odpRcCaps) {

    /** {@code IBV_ODP_SUPPORT} in {@code odp_caps.general_caps}. */
    public static final long ODP_SUPPORT = 1;
    /** {@code IBV_ODP_SUPPORT_READ} in {@code odp_caps.per_transport_caps.rc_odp_caps}. */
    public static final int ODP_SUPPORT_READ = 1 << 3;

    /** {@code enum ibv_atomic_cap}. */
    public enum AtomicCapability { NONE, HCA, GLOB, UNKNOWN;
        public static AtomicCapability of(int code) {
            return code >= 0 && code < UNKNOWN.ordinal() ? values()[code] : UNKNOWN;
        }
    }

    /** True when memory regions may be registered with {@link Access#ON_DEMAND} for RC reads. */
    public boolean supportsOnDemandPaging() {
        return (odpGeneralCaps & ODP_SUPPORT) != 0 && (odpRcCaps & ODP_SUPPORT_READ) != 0;
    }

    public boolean supportsAtomics() {
        return atomicCapability == AtomicCapability.HCA || atomicCapability == AtomicCapability.GLOB;
    }
}
