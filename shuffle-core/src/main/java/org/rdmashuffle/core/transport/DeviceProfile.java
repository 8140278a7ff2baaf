package org.rdmashuffle.core.transport;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.VerbsContext;

/**
 * What an engine knows of its device, probed once at start (as Netty's {@code Epoll} probes its
 * features once): which GID its queue pairs send from, how they connect, and how large its queues may be.
 *
 * @param gid            the GID our queue pairs send from, and why it was chosen (logged: the first thing to check across hosts)
 * @param options        fetching QPs: RNR retried for as long as the QP lives (the server answers only what we asked for)
 * @param servingOptions serving QPs: a finite RNR retry, so a reducer that never posts receives fails its own
 *                       connection instead of holding the server's send slots for ever
 * @param sgeListBroken  the provider's builder loses SGE lists (rxe): multi-SGE reads go through {@code ibv_post_send}
 * @param maxReadSge     scatter entries per RDMA_READ (at most 16)
 * @param maxSendWr      a fetching QP's send queue: every chain in flight plus the metadata sends
 * @param servingSendWr  a serving QP's: every answer its tenant may have in flight, and with windows every
 *                       bind its tenant may have posted ({@link WindowUse#BIND_SLOTS_PER_TENANT})
 * @param cqEntries      entries per completion queue
 * @param maxChains      chains in flight in the whole process, so a queue pair's flush of everything fits one CQ
 * @param registration   pinned or on demand (ODP), and why
 * @param windows        whether serving connections read through memory windows, and why
 */
public record DeviceProfile(GidChoice gid, ConnectOptions options, ConnectOptions servingOptions, boolean sgeListBroken,
                            int maxReadSge, int maxSendWr, int servingSendWr, int cqEntries, int maxChains, MemoryRegistration registration,
                            WindowUse windows) {
    /**
     * RNR NAK timer our QPs ask a sender to wait (IB encoding 28: 163.84 ms): with {@link
     * #SERVING_RNR_RETRY} retries a server waits about a second for a reducer to post a receive.
     */
    static final int MIN_RNR_TIMER = 28;
    static final int SERVING_RNR_RETRY = 6;

    private static final int FETCH_BUFFER_SLAB = 4 << 20;

    /**
     * The size fetch buffers are registered in: slabs of 4 MiB, or of the largest power of two
     * fetchBufferMemory holds if less; the first is registered at the engine's start.
     */
    public static int fetchBufferSlab(EngineConfig config) {
        return (int) Math.min(FETCH_BUFFER_SLAB, Long.highestOneBit(config.fetchBufferMemory()));
    }

    /**
     * Probes the device: its port must be ACTIVE.
     *
     * @param pinnable what this process may pin (the provider's {@code pinnableBytes}: -1 for no limit)
     */
    public static DeviceProfile probe(EngineConfig config, VerbsContext context, long pinnable) {
        DeviceAttributes device = context.queryDevice();
        PortAttributes port = context.queryPort(config.port());
        if (!port.isActive()) {
            throw new IllegalStateException(org.rdmashuffle.verbs.Trouble.PORT_DOWN.line("port " + config.port() + " of "
                    + context.device().name() + " is " + port.state(), "the port ACTIVE", "bring its link up (ip link; "
                    + "the cable, the switch port; for rxe, the network interface it was added on), or choose another "
                    + "port or device (port, device)"));
        }
        GidChoice gid = DeviceSetup.gid(config, context, port);
        ConnectOptions options = DeviceSetup.connectOptions(config, device, port, gid, MIN_RNR_TIMER);
        int maxReadSge = Math.max(1, Math.min(16, device.maxSgeRd() > 0 ? device.maxSgeRd() : device.maxSge()));
        int maxSendWr = Math.min(device.maxQpWr() > 0 ? device.maxQpWr() : Integer.MAX_VALUE,
                config.maxChainsInFlightPerPeer() * config.chainLength() + config.sendBuffers());
        int cqEntries = Math.min(device.maxCqe() > 0 ? device.maxCqe() : 1 << 16, 1 << 15);
        long minPinned = (long) (config.receiveBuffers() + config.sendBuffers()) * config.receiveBufferSize()
                + fetchBufferSlab(config);
        MemoryRegistration registration = MemoryRegistration.choose(config, context.device().name(), device, pinnable, minPinned,
                () -> org.rdmashuffle.verbs.OnDemandPagingCheck.check(context, config.port()));
        WindowUse windows = WindowUse.choose(config, device, registration);
        int bindSlots = windows.on() ? WindowUse.BIND_SLOTS_PER_TENANT : 0;
        // A queue pair entering ERR flushes every outstanding request, signaled or not (window binds too),
        // so the process-wide chain bound keeps a flush of everything inside one completion queue.
        int maxChains = Math.max(1, (cqEntries - config.receiveBuffers() - config.sendBuffers() - bindSlots) / config.chainLength());
        int servingSendWr = Math.min(device.maxQpWr() > 0 ? device.maxQpWr() : Integer.MAX_VALUE,
                config.sendBuffers() + bindSlots);
        return new DeviceProfile(gid, options, options.withRnrRetry(SERVING_RNR_RETRY),
                ProviderQuirks.builderSgeListBroken(context), maxReadSge, maxSendWr, servingSendWr, cqEntries, maxChains,
                registration, windows);
    }
}
