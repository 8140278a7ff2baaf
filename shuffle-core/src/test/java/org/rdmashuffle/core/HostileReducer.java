package org.rdmashuffle.core;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.rdmashuffle.core.control.ControlClient;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.core.server.BlockDescriptor;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.QueuePairEndpoint;
import org.rdmashuffle.verbs.ReceiveWorkRequests;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsProvider;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.WorkRequestOpcode;

/**
 * A reducer written by hand from verbs and the control plane, as an attacker would: it authenticates
 * for its own application (it holds that secret), then sends what it likes, posts receives or not,
 * and reads any (address, rkey) it has got hold of. One queue pair with its own receive queue.
 */
final class HostileReducer implements AutoCloseable {
    static final int BUFFER = 32 << 10;
    private static final int RECEIVES = 8;
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final VerbsContext context;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final QueuePair qp;
    /** RECEIVES receive slots, one send slot, then a landing area for reads. */
    private final MemoryRegion memory;
    private final ControlClient control;
    private final SendWorkRequests sendWr = SendWorkRequests.allocate(1, 1);
    private final ReceiveWorkRequests recvWr = ReceiveWorkRequests.allocate(RECEIVES, 1);
    private final WorkCompletions wc = WorkCompletions.allocate(16);
    private final MessageCodec codec = new MessageCodec(BUFFER);
    private final List<Long> receivedSlots = new ArrayList<>();
    private long nextWrId = 100;

    /** Authenticates for {@code app} at {@code service}'s control plane and connects one queue pair. */
    HostileReducer(VerbsProvider provider, InetSocketAddress service, String app, byte[] secret) throws IOException {
        String device = EngineTestSupport.usesDevice() ? System.getenv("SOFTROCE_DEVICE") : null;
        this.context = provider.devices().stream().filter(d -> device == null || d.name().equals(device)).findFirst()
                .orElseThrow().open();
        this.pd = context.allocateProtectionDomain();
        this.cq = context.createCompletionQueue(64, null, 0);
        this.qp = pd.createQueuePair(QueuePairConfig.of(cq, 16, RECEIVES, 1));
        this.memory = pd.allocateAndRegister((long) (RECEIVES + 1) * BUFFER + (1 << 20), Access.LOCAL_WRITE);
        PortAttributes port = context.queryPort(1);
        String gidEnv = System.getenv("SOFTROCE_GID_INDEX");
        int gid = EngineTestSupport.usesDevice() && gidEnv != null ? Integer.parseInt(gidEnv)
                : RdmaShuffleEngine.chooseGid(context, port);
        ConnectOptions options = ConnectOptions.defaults(1, gid, port.activeMtu() == null ? Mtu.MTU_1024
                : Mtu.min(Mtu.MTU_4096, port.activeMtu())).withRemoteAccess(Access.REMOTE_READ).withRnrRetry(1).withRetry(14, 1);
        this.control = ControlClient.connect(service, secret, app, 64 << 10, WAIT);
        byte[] reply = control.call(ConnectCodec.CONNECT,
                ConnectCodec.encode(new ConnectCodec.Connect(BUFFER, List.of(qp.localEndpoint(options)))), WAIT);
        QueuePairEndpoint theirs = ConnectCodec.decode(reply).endpoints().getFirst();
        qp.connect(theirs, options);
    }

    /** Posts every receive slot (a reducer that never does this is an attack of its own). */
    void postReceives() {
        for (int i = 0; i < RECEIVES; i++) {
            recvWr.set(i, i, memory, (long) i * BUFFER, BUFFER);
        }
        qp.postReceive(recvWr, RECEIVES);
    }

    /** SENDs {@code length} bytes of what {@code fill} wrote into the send slot. */
    void sendRaw(java.util.function.ToIntFunction<MemorySegment> fill) {
        MemorySegment slot = memory.segment().asSlice((long) RECEIVES * BUFFER, BUFFER);
        int length = fill.applyAsInt(slot);
        sendWr.get(0).reset().wrId(nextWrId++).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, memory, (long) RECEIVES * BUFFER, length).sgeCount(1);
        qp.postSend(sendWr, 1);
    }

    /** Sends {@code m} and returns the first message that comes back. */
    Message ask(Message m) throws IOException {
        sendRaw(slot -> codec.encode(m, slot));
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            int n = cq.poll(wc);
            for (int i = 0; i < n; i++) {
                if (wc.opcode(i) == org.rdmashuffle.verbs.WorkCompletionOpcode.RECV) {
                    if (!wc.isSuccess(i)) {
                        throw new IOException("receive failed: " + wc.status(i));
                    }
                    long slot = wc.wrId(i);
                    receivedSlots.add(slot);
                    return codec.decode(memory.segment().asSlice(slot * BUFFER, wc.byteLength(i)), wc.byteLength(i));
                } else if (!wc.isSuccess(i)) {
                    throw new IOException("send failed: " + wc.status(i));
                }
            }
        }
        throw new IOException("no answer within " + WAIT);
    }

    /** The descriptors the service hands this reducer for {@code blocks} of shuffle {@code shuffle}. */
    List<BlockDescriptor> describe(int shuffle, List<BlockId> blocks) throws IOException {
        Message answer = ask(new Message.FetchRequest(1, shuffle, blocks));
        if (answer instanceof Message.FetchResponse r) {
            return r.blocks();
        }
        throw new IOException("asked for descriptors, got " + answer);
    }

    /** RDMA_READs the block {@code d} names; returns the completion status (bytes in {@link #landed}). */
    WorkCompletionStatus read(BlockDescriptor d) throws IOException {
        long landing = (long) (RECEIVES + 1) * BUFFER;
        memory.segment().asSlice(landing, d.length()).fill((byte) 0);
        sendWr.get(0).rdmaRead(nextWrId++, SendFlags.SIGNALED, memory, landing, (int) d.length(), d.address(), d.rkey());
        qp.postSend(sendWr, 1);
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            int n = cq.poll(wc);
            for (int i = 0; i < n; i++) {
                if (wc.opcode(i) != org.rdmashuffle.verbs.WorkCompletionOpcode.RECV) {
                    return wc.status(i);
                }
            }
        }
        throw new IOException("the read never completed");
    }

    /** The bytes the last read left. */
    byte[] landed(int length) {
        return memory.segment().asSlice((long) (RECEIVES + 1) * BUFFER, length).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }

    ControlClient control() {
        return control;
    }

    @Override
    public void close() {
        control.close();
        qp.close();
        memory.close();
        sendWr.close();
        recvWr.close();
        wc.close();
        cq.close();
        pd.close();
        context.close();
    }
}
