package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.core.protocol.Message;
import org.rdmashuffle.verbs.Errno;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsException;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * Closes of the serving side's device resources attempt every step whatever the ones before did: one
 * failure frees the rest, and the first failure is what the caller sees (the others suppressed in it).
 */
class CloseIsExceptionSafeTest {
    private static final EngineConfig CONFIG = EngineConfig.defaults().set(EngineConfig.KEY_RECEIVE_BUFFERS, "8")
            .set(EngineConfig.KEY_RECEIVE_LOW_WATER, "2").set(EngineConfig.KEY_SEND_BUFFERS, "4");

    /** A queue pair whose destroy fails with {@code errno} (null: succeeds), recording that it was asked. */
    private static QueuePair queuePair(int number, Integer errno, List<Integer> destroyed) {
        return (QueuePair) Proxy.newProxyInstance(QueuePair.class.getClassLoader(), new Class<?>[] {QueuePair.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "qpNumber" -> number;
                    case "close" -> {
                        destroyed.add(number);
                        if (errno != null) {
                            throw new VerbsException("ibv_destroy_qp", errno, "refused for the test");
                        }
                        yield null;
                    }
                    case "toString" -> "QP " + number;
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> method.getReturnType() == boolean.class ? false
                            : method.getReturnType() == int.class ? 0 : method.getReturnType() == long.class ? 0L : null;
                });
    }

    /**
     * A failed ibv_destroy_qp left the rest of the retirement undone: the connection stayed in its
     * tenant, its owner never heard, and its sends' slots never came back (the tenant's send slots
     * leaked). Every step runs now; the destroy's failure is thrown after them.
     */
    @Test
    void aQueuePairThatFailsToBeDestroyedStillGivesItsSendSlotsBackAndItsOtherQueuePairsGo() throws Exception {
        try (SoftwareProvider provider = new SoftwareProvider(SoftwareProvider.Config.loopback());
             VerbsContext context = provider.devices().getFirst().open()) {
            TenantDomain tenant = new TenantDomain(context, 1, "app-a", "alice", CONFIG, MemoryRegistration.PINNED);
            try {
                List<Integer> destroyed = new ArrayList<>();
                DataConnection c = new DataConnection("peer:1", DataConnection.Role.SERVING, tenant, 4096,
                        new QueuePair[] {queuePair(11, Errno.EBUSY, destroyed), queuePair(12, null, destroyed)},
                        EngineConfig.PostPath.POST_SEND, 1, 1, false, null);
                AtomicBoolean told = new AtomicBoolean();
                c.handle(new ConnectionHandler() {
                    @Override
                    public void onMessage(DataConnection d, Message m) {
                    }

                    @Override
                    public void onReadCompleted(DataConnection d, long chainId, Throwable failure) {
                    }

                    @Override
                    public void onFailure(DataConnection d, Throwable cause) {
                    }

                    @Override
                    public void onProtocolError(DataConnection d, String reason) {
                    }

                    @Override
                    public void onRetired(DataConnection d) {
                        told.set(true);
                    }
                });
                List<DataConnection> forgotten = new ArrayList<>();
                ConnectionTable table = new ConnectionTable(forgotten::add);
                tenant.connections().add(c);
                table.trackServing(c);

                VerbsException thrown = assertThrows(VerbsException.class, () -> table.retire(c));
                assertEquals(Errno.EBUSY, thrown.errno());
                assertEquals(List.of(11, 12), destroyed, "the second QP is destroyed after the first failed");
                assertEquals(List.of(c), forgotten, "its sends' slots given back");
                assertTrue(told.get(), "its owner told (it counts the connection out)");
                assertFalse(tenant.connections().contains(c));
                assertEquals(0, table.servingCount());
                assertEquals(null, table.byQpNumber(12));
            } finally {
                tenant.close();
            }
        }
    }

    /**
     * A tenant's close threw at its first failing step (its SRQ, or a child: the registry) and left
     * the rest — pools, PD — for ever. Each step is attempted; the future fails with the first
     * failure, the later ones suppressed in it; nothing is reported freed.
     */
    @Test
    void aTenantWhoseChildrenFailToCloseStillFreesItsPools() throws Exception {
        try (SoftwareProvider provider = new SoftwareProvider(SoftwareProvider.Config.loopback());
             VerbsContext context = provider.devices().getFirst().open()) {
            TenantDomain tenant = new TenantDomain(context, 1, "app-a", "alice", CONFIG, MemoryRegistration.PINNED);
            IllegalStateException first = new IllegalStateException("a region failed to deregister");
            IllegalStateException second = new IllegalStateException("a registration failed to end");
            tenant.adopt(() -> {
                throw first;
            });
            tenant.adopt(() -> CompletableFuture.failedFuture(second));
            AtomicBoolean freed = new AtomicBoolean();
            tenant.whenFreed(() -> freed.set(true));

            CompletableFuture<Void> closing = tenant.closeAsync(1000, c -> { });
            ExecutionException failed = assertThrows(ExecutionException.class, () -> closing.get(10, TimeUnit.SECONDS));
            assertSame(first, failed.getCause());
            assertEquals(List.of(second), List.of(first.getSuppressed()));
            assertFalse(freed.get(), "reported freed though a step failed");
            // The pools' memory is gone: their buffers can no longer be touched.
            assertThrows(IllegalStateException.class,
                    () -> tenant.sendPool().slot(0).get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
        }
    }

    /**
     * A queue-pair set-up under way when the tenant closes: its connection joins the tenant after the
     * close began. It is retired with the others before the SRQ goes (ibv_destroy_srq refuses while a
     * QP uses it), and everything is freed.
     */
    @Test
    void aSetUpUnderWayWhenTheTenantClosesHasItsConnectionRetiredBeforeTheSrqGoes() throws Exception {
        try (SoftwareProvider provider = new SoftwareProvider(SoftwareProvider.Config.loopback());
             VerbsContext context = provider.devices().getFirst().open();
             org.rdmashuffle.verbs.CompletionQueue cq = context.createCompletionQueue(16, null, 0)) {
            TenantDomain tenant = new TenantDomain(context, 1, "app-a", "alice", CONFIG, MemoryRegistration.PINNED);
            assertTrue(tenant.beginSetUp());
            CompletableFuture<CompletableFuture<Void>> closing = CompletableFuture.supplyAsync(
                    () -> tenant.closeAsync(10_000, c -> c.close()), r -> Thread.ofVirtual().start(r));
            while (!tenant.isClosed()) {
                Thread.sleep(5);
            }
            assertFalse(tenant.beginSetUp(), "a set-up began on a closing tenant");
            QueuePair qp = tenant.pd().createQueuePair(org.rdmashuffle.verbs.QueuePairConfig.of(cq, 4, 0, 1)
                    .withSharedReceiveQueue(tenant.srq()));
            tenant.connections().add(new DataConnection("peer:2", DataConnection.Role.SERVING, tenant, 4096,
                    new QueuePair[] {qp}, EngineConfig.PostPath.POST_SEND, 1, 1, false, null));
            tenant.endSetUp();
            AtomicBoolean freed = new AtomicBoolean();
            tenant.whenFreed(() -> freed.set(true));
            closing.get(10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS);
            assertTrue(freed.get());
        }
    }
}
