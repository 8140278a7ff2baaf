package org.rdmashuffle.core.transport;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.OnDemandPagingCheck;

/**
 * How the engine registers its memory — map outputs, fetch buffers, its receive and send buffers:
 * pinned ({@code ibv_reg_mr} pins every page, counted against the memlock limit) or on demand (ODP:
 * nothing pinned; the device faults pages in when a read or a receive reaches them, and the serving
 * side prefetches the ranges a reducer asks for). Decided once per engine, at start, from {@code
 * onDemandPaging}, the device's ODP capabilities and how much this process may pin; the reason is
 * logged with the engine's start and printed by the doctor.
 *
 * <p>{@code auto} registers on demand only where the device pages on demand for everything the engine
 * registers ({@link DeviceAttributes#ODP_ENGINE_RC_CAPS}) and pinning is limited below what the engine
 * may register: a container's 8 MiB limit, say. Where pinning is not limited, pinned memory is used:
 * a page fault on the data path costs more than a pinned page (docs/native-verbs.md).
 *
 * <p>A device whose paging is right only for transfers that start on a page boundary (rxe in Linux
 * 7.2 and 7.3: {@code OnDemandPagingCheck}) is used on demand with {@link #pageAlignedReads()}: every
 * read this engine posts starts on a page boundary at both ends, its receive and send buffers start on
 * pages, and its connect reply tells reducers to read its regions so ({@code pageAlignedReads}).
 *
 * @param onDemand         whether regions are registered with {@link Access#ON_DEMAND}
 * @param pageAlignedReads whether every transfer must start on a page boundary (reads, receive and send buffers)
 * @param reason           why, in words for the log
 */
public record MemoryRegistration(boolean onDemand, boolean pageAlignedReads, String reason) {
    /** Pinned, for tests and providers where nothing is pinned at all. */
    public static final MemoryRegistration PINNED = new MemoryRegistration(false, "pinned");

    /** Transfers at any offset. */
    public MemoryRegistration(boolean onDemand, String reason) {
        this(onDemand, false, reason);
    }

    /** Bytes of a page: where {@link #pageAlignedReads()} makes transfers start (the page the check verified). */
    public static final int PAGE = OnDemandPagingCheck.PAGE;

    /** {@code bytes} rounded up to whole pages: what registering them pins, a slot's stride on pages. */
    public static long roundUpToPage(long bytes) {
        return (bytes + PAGE - 1) & -PAGE;
    }

    /** {@code access}, with {@link Access#ON_DEMAND} when registering on demand. */
    public int access(int access) {
        return onDemand ? access | Access.ON_DEMAND : access;
    }

    /**
     * @param pinnable what this process may pin ({@code VerbsProvider.pinnableBytes}): -1 for no limit
     * @param minPinned the least a pinned engine needs to start (its receive, send and first fetch buffers)
     * @param check run only where on demand would be chosen: whether the device's on-demand paging gives
     *              every byte, at any offset or only from page boundaries ({@code OnDemandPagingCheck})
     */
    public static MemoryRegistration choose(EngineConfig config, String device, DeviceAttributes attributes, long pinnable,
                                            long minPinned, java.util.function.Supplier<OnDemandPagingCheck.Result> check) {
        MemoryRegistration chosen = chooseOnDemand(config, device, attributes, pinnable, minPinned, check);
        boolean forced = config.pageAlignedReads() == EngineConfig.PageAlignedReads.TRUE;
        return forced && !chosen.pageAlignedReads
                ? new MemoryRegistration(chosen.onDemand, true, chosen.reason + "; reads from page boundaries: "
                        + EngineConfig.KEY_PAGE_ALIGNED_READS + "=true")
                : chosen;
    }

    private static MemoryRegistration chooseOnDemand(EngineConfig config, String device, DeviceAttributes attributes,
                                                     long pinnable, long minPinned,
                                                     java.util.function.Supplier<OnDemandPagingCheck.Result> check) {
        boolean capable = attributes.supportsOnDemandPaging(DeviceAttributes.ODP_ENGINE_RC_CAPS);
        String broken = null;
        boolean pageStartOnly = false;
        // What the engine may register at most; auto goes on demand only where the limit is below it.
        long wanted = config.registeredMemoryLimit() + config.fetchBufferMemory() + minPinned;
        boolean limited = pinnable >= 0 && pinnable < wanted;
        if (capable && (config.onDemandPaging() == EngineConfig.OnDemandPaging.TRUE
                || config.onDemandPaging() == EngineConfig.OnDemandPaging.AUTO && limited)) {
            OnDemandPagingCheck.Result checked = check.get();
            pageStartOnly = checked.pageStartOnly();
            broken = pageStartOnly && config.pageAlignedReads() == EngineConfig.PageAlignedReads.FALSE
                    ? checked.failure() + " (right from page boundaries, but " + EngineConfig.KEY_PAGE_ALIGNED_READS + "=false)"
                    : checked.why();
            capable = broken == null;
        }
        String aligned = pageStartOnly ? "; every transfer from a page boundary (" + device + "'s paging gets others wrong)" : "";
        String caps = "odp general caps 0x" + Long.toHexString(attributes.odpGeneralCaps()) + ", rc caps 0x"
                + Integer.toHexString(attributes.odpRcCaps()) + ", needs 0x" + Integer.toHexString(DeviceAttributes.ODP_ENGINE_RC_CAPS);
        String limit = pinnable < 0 ? "no memlock limit" : "memlock limit " + bytes(pinnable);
        return switch (config.onDemandPaging()) {
            case TRUE -> {
                if (!capable) {
                    throw new IllegalStateException(EngineConfig.KEY_ON_DEMAND_PAGING + "=true, but " + (broken != null ? broken
                            : device + " has no on-demand paging for what the engine registers (" + caps + ")")
                            + ": set it to auto or false");
                }
                yield new MemoryRegistration(true, pageStartOnly, "on demand (ODP): " + EngineConfig.KEY_ON_DEMAND_PAGING + "=true" + aligned);
            }
            case FALSE -> {
                if (pinnable >= 0 && pinnable < minPinned) {
                    throw new IllegalStateException(org.rdmashuffle.verbs.Trouble.MEMLOCK.line(limit, bytes(minPinned)
                            + " pinned to start (" + EngineConfig.KEY_ON_DEMAND_PAGING + "=false)",
                            "raise it (ulimit -l, LimitMEMLOCK=, docs/kubernetes.md)" + (capable ? " or set "
                                    + EngineConfig.KEY_ON_DEMAND_PAGING + "=auto: " + device + " pages on demand" : "")));
                }
                yield new MemoryRegistration(false, "pinned: " + EngineConfig.KEY_ON_DEMAND_PAGING + "=false");
            }
            case AUTO -> {
                if (!limited) {
                    yield new MemoryRegistration(false, "pinned: " + (pinnable < 0 ? "no memlock limit" : limit + ", enough"));
                }
                if (capable) {
                    yield new MemoryRegistration(true, pageStartOnly, "on demand (ODP): " + limit + ", below the " + bytes(wanted)
                            + " the engine may register, and " + device + " pages on demand" + aligned);
                }
                String why = broken != null ? broken
                        : device + " has no on-demand paging for what the engine registers (" + caps + ")";
                if (pinnable >= 0 && pinnable < minPinned) {
                    throw new IllegalStateException(org.rdmashuffle.verbs.Trouble.MEMLOCK.line(limit, bytes(minPinned)
                            + " pinned to start, and on demand is no way round it: " + why,
                            "raise the limit (ulimit -l, LimitMEMLOCK=, docs/kubernetes.md) or give the process CAP_IPC_LOCK"));
                }
                yield new MemoryRegistration(false, "pinned (" + limit + "): " + why);
            }
        };
    }

    private static String bytes(long n) {
        return org.rdmashuffle.verbs.Sizes.describe(n);
    }
}
