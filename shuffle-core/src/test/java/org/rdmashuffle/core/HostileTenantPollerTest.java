package org.rdmashuffle.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.rdmashuffle.core.EngineTestSupport.Collector;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.control.ControlClient;
import org.rdmashuffle.core.metrics.ServedCounts;
import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.ConnectCodec;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.core.protocol.MessageCodec;
import org.rdmashuffle.core.server.MapOutputRegistry;
import org.rdmashuffle.core.transport.DataConnection;

/**
 * The shared service against an authenticated tenant, round three: what a peer's messages cost the
 * shared completion poller, the figures and the log. One test per attack, named after it, from the
 * attacker's side (a {@link HostileReducer} holding only its own application's secret); each measures
 * the work or the lines the attack caused (descriptions, counts, log records), not time.
 */
@ExtendWith(NoThreadOutlivesTheTest.class)
class HostileTenantPollerTest {
    private static final byte[] SECRET_A = ServiceNode.SECRET_A;
    private static final Duration CALL = Duration.ofSeconds(10);
    /** What one 32 KiB request naming each block in 3 bytes can name. */
    private static final int NAMED = 10_900;

    @TempDir
    Path dir;

    /**
     * A reducer names a 64-byte receive buffer in its CONNECT (the server used to take any size from 64
     * up, and sized every answer by it: none fitted, and each request threw on the poller). The CONNECT
     * is refused, naming the field and its bounds; nothing is set up, and the application's honest
     * reducers are served.
     */
    @Test
    void aReducerNamingASixtyFourByteReceiveBufferIsRefusedAtConnect_namingTheFieldAndItsBounds() throws Exception {
        try (ServiceNode node = new ServiceNode()) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3,
                    new int[] {3000, 3000}, 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            IOException refused = assertThrows(IOException.class, () -> new HostileReducer(node.clientProvider,
                    node.service.address(), "app-a", SECRET_A, 16, 64).close());
            assertTrue(refused.getMessage().contains("receive buffer size of 64 bytes, outside "
                    + ConnectCodec.MIN_RECEIVE_BUFFER_SIZE + ".."), refused.getMessage());
            assertEquals(0, node.service.counters().servingConnections(), "nothing set up for the refused CONNECT");
            List<BlockId> blocks = EngineTestSupport.everyPartition(List.of(a));
            Collector c = new Collector(blocks.size());
            node.reducer("app-a", SECRET_A).fetchBlocks(node.service.address(), blocks, c);
            c.await().assertAllIntact(EngineTestSupport.expected(List.of(a), blocks));
        }
    }

    /**
     * One 32 KiB request names one block 10,900 times, or 8,000 empty partitions of an output: each used to be described on the poller, and the answer that could not hold them was turned
     * into text twice (every descriptor's, ~2 MB). The request is now described only as far as an answer
     * to its connection holds ({@link MessageCodec#descriptorsFitting}: the held answer of its first
     * blocks; the reducer asks again for the rest): the poller's work is bounded by what the answer
     * carries, not by what the request names.
     */
    @Test
    void aRequestNamingTenThousandBlocksIsDescribedNoFurtherThanItsAnswerHolds() throws Exception {
        int[] sizes = new int[NAMED];
        sizes[0] = 3000;
        sizes[NAMED - 1] = 100; // every partition between empty
        try (ServiceNode node = new ServiceNode()) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3,
                    sizes, 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            MapOutputRegistry registry = node.service.tenantOf("app-a").registry();
            int fitting = MessageCodec.descriptorsFitting(HostileReducer.BUFFER);
            List<BlockId> emptyPartitions = new ArrayList<>();
            for (int p = 1; p <= 8_000; p++) { // as many as 32 KiB names: 4 bytes each from partition 128
                emptyPartitions.add(BlockId.of(0, 3, p));
            }
            try (HostileReducer heavy = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                heavy.postReceives();
                heavy.describe(0, List.of(BlockId.of(0, 3, 0))); // registered: answered on the poller from now on
                for (List<BlockId> named : List.of(Collections.nCopies(NAMED, BlockId.of(0, 3, 0)), emptyPartitions)) {
                    long before = registry.descriptions();
                    Message answer = heavy.ask(new Message.FetchRequest(9, 0, named, false));
                    long described = registry.descriptions() - before;
                    Message.FetchResponse r = assertInstanceOf(Message.FetchResponse.class, answer,
                            "the first blocks of " + named.size() + " are answered");
                    assertEquals(fitting, r.blocks().size(), "the blocks an answer holds");
                    assertTrue(described <= fitting, named.size() + " blocks named cost " + described + " descriptions, "
                            + "more than the " + fitting + " an answer holds");
                }
            }
        }
    }

    /**
     * A reducer names one block 500 times in a request (the served figures counted it 500 times, and
     * can be driven to wrap), then has an answer that is never sent counted (it used to be counted when
     * made). The figures count each block of a sent answer once, and nothing of an answer never sent.
     */
    @Test
    void aBlockNamedHundredsOfTimesIsCountedServedOnce_andAnAnswerNeverSentIsNotCounted() throws Exception {
        try (ServiceNode node = new ServiceNode()) {
            EngineTestSupport.MapOutput a = EngineTestSupport.writeMapOutput(Files.createDirectories(dir.resolve("a")), 0, 3,
                    new int[] {3000, 3000}, 3);
            node.service.registerMapOutput("app-a", 0, 3, a.file(), a.offsets());
            try (HostileReducer inflating = new HostileReducer(node.clientProvider, node.service.address(), "app-a", SECRET_A)) {
                inflating.postReceives();
                inflating.describe(0, List.of(BlockId.of(0, 3, 1))); // registered: answered on the poller from now on
                // An answer is counted just after it is posted: the reducer may have it first.
                ServedCounts.Snapshot before = servedOnceCounted(node, 0);
                Message answer = inflating.ask(new Message.FetchRequest(9, 0, Collections.nCopies(500, BlockId.of(0, 3, 0)), false));
                assertEquals(500, assertInstanceOf(Message.FetchResponse.class, answer).blocks().size());
                ServedCounts.Snapshot after = servedOnceCounted(node, before.requests());
                assertEquals(1, after.requests() - before.requests(), "one answer sent");
                assertEquals(1, after.blocks() - before.blocks(), "one block, named 500 times");
                assertEquals(a.offsets()[1], after.bytes() - before.bytes(), "its bytes, once");

                AtomicBoolean dropNext = new AtomicBoolean(true);
                node.service.tamper(new RdmaShuffleEngine.Tamper() {
                    @Override
                    public Message message(DataConnection.Role role, Message m) {
                        return m instanceof Message.FetchResponse && dropNext.getAndSet(false) ? null : m; // never sent
                    }
                });
                inflating.sendRaw(slot -> new MessageCodec(HostileReducer.BUFFER)
                        .encode(new Message.FetchRequest(10, 0, List.of(BlockId.of(0, 3, 0)), false), slot));
                // Answered on the same poller in order: once this answer is here, the dropped one was made.
                assertInstanceOf(Message.FetchResponse.class, inflating.ask(new Message.FetchRequest(11, 0,
                        List.of(BlockId.of(0, 3, 1)), false)));
                assertTrue(!dropNext.get(), "the tamper dropped an answer");
                ServedCounts.Snapshot last = servedOnceCounted(node, after.requests());
                assertEquals(1, last.requests() - after.requests(), "the answer sent, not the one dropped");
                assertEquals(a.offsets()[2] - a.offsets()[1], last.bytes() - after.bytes(), "the bytes of the answer sent");
            }
        }
    }

    /** App a's served figures once more than {@code requests} answers are counted. */
    private static ServedCounts.Snapshot servedOnceCounted(ServiceNode node, long requests) throws InterruptedException {
        EngineTestSupport.eventually("an answer counted", () -> node.service.tenantOf("app-a").requests().served().requests() > requests);
        return node.service.tenantOf("app-a").requests().served();
    }

    /**
     * A tenant sends control requests of a type no version has, one per connection, again and again:
     * each used to be logged at WARNING with a stack trace, its connection kept. Each connection is now
     * told and closed, and the log has one line for the lot (the rest counted), no stack trace.
     */
    @Test
    void aFloodOfUnknownControlRequestsClosesEachConnection_andLogsOneLineAMinute() throws Exception {
        try (LogCounter log = new LogCounter("org.rdmashuffle.core");
             ServiceNode node = new ServiceNode()) {
            int connections = 20;
            for (int i = 0; i < connections; i++) {
                try (ControlClient c = ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL)) {
                    IOException told = assertThrows(IOException.class, () -> c.call((byte) 77, new byte[8], CALL));
                    assertTrue(told.getMessage().contains("unknown control request type 77"), told.getMessage());
                    EngineTestSupport.eventually("the connection is closed", () -> !c.isOpen());
                }
            }
            assertEquals(0, log.withStackTraces("request"), "stack traces logged");
            long lines = log.warnings("unknown control request");
            assertTrue(lines <= 1, connections + " unknown requests logged " + lines + " WARNING lines");
        }
    }

    /**
     * A tenant opens control connections beyond its bound, again and again: each refusal used to be a
     * log line. One line now, the rest counted.
     */
    @Test
    void aFloodOfRefusedControlConnectionsLogsOneLineAMinute() throws Exception {
        EngineConfig config = EngineTestSupport.smallConfig().set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, "1");
        try (LogCounter log = new LogCounter("org.rdmashuffle.core");
             ServiceNode node = new ServiceNode(config);
             ControlClient held = ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL)) {
            int refusals = 20;
            for (int i = 0; i < refusals; i++) {
                assertThrows(IOException.class,
                        () -> ControlClient.connect(node.service.address(), SECRET_A, "app-a", 64 << 10, CALL).close());
            }
            long lines = log.records("a control connection of app-a refused");
            assertTrue(lines <= 1, refusals + " refused connections logged " + lines + " lines at INFO or above");
            assertTrue(held.isOpen());
        }
    }

    /** Counts what the loggers below a name publish while open (JUL, where System.Logger goes). */
    private static final class LogCounter extends Handler implements AutoCloseable {
        private final java.util.logging.Logger logger; // held: JUL keeps loggers weakly
        private final List<LogRecord> records = Collections.synchronizedList(new ArrayList<>());

        LogCounter(String name) {
            logger = java.util.logging.Logger.getLogger(name);
            logger.addHandler(this);
        }

        @Override
        public void publish(LogRecord r) {
            records.add(r);
        }

        long warnings(String containing) {
            synchronized (records) {
                return records.stream().filter(r -> r.getLevel().intValue() >= Level.WARNING.intValue()
                        && String.valueOf(r.getMessage()).contains(containing)).count();
            }
        }

        long records(String containing) {
            synchronized (records) {
                return records.stream().filter(r -> String.valueOf(r.getMessage()).contains(containing)).count();
            }
        }

        long withStackTraces(String containing) {
            synchronized (records) {
                return records.stream().filter(r -> r.getThrown() != null && String.valueOf(r.getMessage()).contains(containing))
                        .count();
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
            logger.removeHandler(this);
        }
    }
}
