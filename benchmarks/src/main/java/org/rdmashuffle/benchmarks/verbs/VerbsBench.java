package org.rdmashuffle.benchmarks.verbs;

import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SendOps;
import org.rdmashuffle.verbs.Verbs;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsProvider;

/**
 * A requester QP connected to a responder QP on one device, with a registered source region on the
 * responder side and a destination region on the requester side: what the read benchmarks need.
 * Device and GID index come from {@code SOFTROCE_DEVICE} / {@code SOFTROCE_GID_INDEX} (set in the
 * Soft-RoCE guest) or {@code -Dbench.device} / {@code -Dbench.gidIndex}.
 */
final class VerbsBench implements AutoCloseable {
    final VerbsContext context;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final CompletionQueue responderCq;
    final QueuePair requester;
    final QueuePair responder;
    final MemoryRegion source;
    final MemoryRegion destination;

    VerbsBench(long bytes, int sendDepth) {
        int gidIndex = Integer.parseInt(System.getProperty("bench.gidIndex",
                System.getenv().getOrDefault("SOFTROCE_GID_INDEX", "0")));
        context = device().open();
        ConnectOptions options = options(context, gidIndex);
        pd = context.allocateProtectionDomain();
        cq = context.createCompletionQueue(sendDepth, null, 0);
        responderCq = context.createCompletionQueue(4, null, 0);
        // Created for both post paths: ibv_post_send works on an extended QP too, so both are measured on one QP.
        requester = pd.createQueuePair(QueuePairConfig.of(cq, sendDepth, 1, 1).withSendOps(SendOps.ALL_BUILDER_OPS));
        responder = pd.createQueuePair(QueuePairConfig.of(responderCq, 4, 1, 1));
        requester.connect(responder.localEndpoint(options), options);
        responder.connect(requester.localEndpoint(options), options);
        source = pd.allocateAndRegister(bytes, Access.LOCAL_WRITE | Access.REMOTE_READ);
        destination = pd.allocateAndRegister(bytes, Access.LOCAL_WRITE);
        source.segment().fill((byte) 0x5A);
    }

    /** The device to measure: {@code -Dbench.device}, {@code SOFTROCE_DEVICE}, else the provider's first. */
    static VerbsDevice device() {
        VerbsProvider provider = Verbs.select(System.getProperty("bench.provider", Verbs.AUTO)).orElseThrow();
        String name = System.getProperty("bench.device", System.getenv("SOFTROCE_DEVICE"));
        return name == null ? provider.devices().getFirst()
                : provider.devices().stream().filter(d -> d.name().equals(name)).findFirst().orElseThrow();
    }

    /** Port 1 at {@code gidIndex}, with as many outstanding RDMA_READs as the device allows, as perftest does. */
    static ConnectOptions options(VerbsContext context, int gidIndex) {
        PortAttributes port = context.queryPort(1);
        // 16 is ConnectOptions' default, and what held reads back at 64 KiB (benchmarks.md).
        DeviceAttributes attrs = context.queryDevice();
        int reads = Math.min(attrs.maxQpInitRdAtomic(), attrs.maxQpRdAtomic());
        ConnectOptions base = ConnectOptions.defaults(1, gidIndex, Mtu.min(Mtu.MTU_4096, port.activeMtu()));
        return new ConnectOptions(base.portNumber(), base.gidIndex(), base.mtu(), base.remoteAccess(), reads, reads,
                base.minRnrTimer(), base.timeout(), base.retryCount(), base.rnrRetry());
    }

    /** Spins until at least one completion arrives; throws for an error completion. */
    int awaitCompletion(org.rdmashuffle.verbs.WorkCompletions completions) {
        int n;
        do {
            n = cq.poll(completions);
        } while (n == 0);
        if (!completions.isSuccess(0)) {
            throw completions.failure(0);
        }
        return n;
    }

    @Override
    public void close() {
        requester.close();
        responder.close();
        source.close();
        destination.close();
        cq.close();
        responderCq.close();
        pd.close();
        context.close();
    }
}
