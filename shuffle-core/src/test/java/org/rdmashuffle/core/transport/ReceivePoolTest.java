package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.ValueLayout;
import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.CompletionQueue;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.MemoryRegion;
import org.rdmashuffle.verbs.ProtectionDomain;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairConfig;
import org.rdmashuffle.verbs.SendFlags;
import org.rdmashuffle.verbs.SendWorkRequests;
import org.rdmashuffle.verbs.SharedReceiveQueue;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.WorkCompletionStatus;
import org.rdmashuffle.verbs.WorkCompletions;
import org.rdmashuffle.verbs.WorkRequestOpcode;
import org.rdmashuffle.verbs.testing.TestProviders;

/** A small pool serves many more messages than it has buffers by reposting; an exhausted pool makes senders fail with RNR. */
class ReceivePoolTest {
    private TestProviders.OpenDevice device;
    private VerbsContext context;
    private ProtectionDomain pd;
    private CompletionQueue sendCq;
    private CompletionQueue recvCq;
    private SharedReceiveQueue srq;
    private QueuePair sender;
    private QueuePair receiver;
    private MemoryRegion source;

    @BeforeEach
    void open() {
        device = TestProviders.openDevice();
        context = device.context;
        pd = context.allocateProtectionDomain();
        sendCq = context.createCompletionQueue(64, null, 0);
        recvCq = context.createCompletionQueue(64, null, 0);
        srq = pd.createSharedReceiveQueue(64, 1, 0);
        source = pd.allocateAndRegister(4096, Access.LOCAL_WRITE);
    }

    private void connect(int rnrRetry) {
        ConnectOptions o = device.options.withRnrRetry(rnrRetry);
        sender = pd.createQueuePair(QueuePairConfig.of(sendCq, 32, 1, 1));
        receiver = pd.createQueuePair(new QueuePairConfig(sendCq, recvCq, srq, 4, 0, 1, 1, 0, false));
        sender.connect(receiver.localEndpoint(o), o);
        receiver.connect(sender.localEndpoint(o), o);
    }

    @AfterEach
    void close() {
        if (sender != null) {
            sender.close();
            receiver.close();
        }
        srq.close();
        source.close();
        pd.close();
        device.close();
    }

    @Test
    void fourBuffersCarryFiftyMessagesByReposting() {
        connect(7);
        try (ReceivePool pool = new ReceivePool(pd, srq, 4, 256, 2, 2);
             SendWorkRequests send = SendWorkRequests.allocate(1, 1);
             WorkCompletions wc = WorkCompletions.allocate(8)) {
            assertEquals(4, pool.posted());
            Set<Long> slots = new HashSet<>();
            int received = 0;
            for (int m = 0; m < 50; m++) {
                source.segment().set(ValueLayout.JAVA_INT, 0, m);
                send.get(0).reset().wrId(m).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, source, 0, 4 + m).sgeCount(1);
                sender.postSend(send, 1);
                int got = 0;
                while (got == 0) {
                    got = recvCq.poll(wc);
                }
                assertTrue(wc.isSuccess(0));
                pool.consumed();
                assertEquals(m, pool.buffer(wc.wrId(0), wc.byteLength(0)).get(ValueLayout.JAVA_INT, 0));
                slots.add(wc.wrId(0));
                pool.repost(wc.wrId(0));
                received++;
                while (sendCq.poll(wc) == 0) {
                    Thread.onSpinWait();
                }
                assertTrue(wc.isSuccess(0), () -> wc.failure(0).getMessage());
            }
            assertEquals(50, received);
            assertEquals(4, slots.size(), "the same four buffers, reused");
            assertTrue(pool.posted() + pool.pendingReposts() == 4, pool.posted() + " posted + " + pool.pendingReposts() + " pending");
        }
    }

    @Test
    void anExhaustedPoolFailsTheSenderWithReceiverNotReady() {
        connect(1);
        try (ReceivePool pool = new ReceivePool(pd, srq, 2, 256, 0, 2);
             SendWorkRequests send = SendWorkRequests.allocate(3, 1);
             WorkCompletions wc = WorkCompletions.allocate(8)) {
            for (int i = 0; i < 3; i++) {
                send.get(i).reset().wrId(i).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, source, 0, 8).sgeCount(1);
            }
            sender.postSend(send, 3); // three messages, two buffers, nobody reposts
            int n = 0;
            WorkCompletionStatus last = null;
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (n < 3 && System.nanoTime() < deadline) {
                int got = sendCq.poll(wc);
                for (int i = 0; i < got; i++, n++) {
                    last = wc.status(i);
                }
            }
            assertEquals(3, n);
            assertEquals(WorkCompletionStatus.RNR_RETRY_EXC_ERR, last);
        }
    }

    @Test
    void slotsAndLengthsThePoolNeverGaveAreRefused() {
        try (ReceivePool pool = new ReceivePool(pd, srq, 4, 256, 1, 2)) {
            assertTrue(assertThrows(IllegalArgumentException.class, () -> pool.buffer(4, 1)).getMessage()
                    .contains("wr_id 4 is not a slot of this receive pool (0..3)"));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> pool.buffer(0, 257)).getMessage()
                    .contains("received length 257 in a 256-byte receive buffer"));
            assertThrows(IllegalArgumentException.class, () -> pool.repost(-1));
        }
    }
}
