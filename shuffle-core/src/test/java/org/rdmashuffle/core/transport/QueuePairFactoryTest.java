package org.rdmashuffle.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.QueuePair;
import org.rdmashuffle.verbs.QueuePairCapabilities;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.software.SoftwareProvider;

/**
 * Queue pairs sized by role: a serving QP only SENDs answers (one SGE, as many at once as its
 * tenant's send buffers), so it does not get a fetching QP's send queue of read chains -- which,
 * on a NIC, is memory per reducer served.
 */
class QueuePairFactoryTest {

    @Test
    void aServingQueuePairGetsTheSendQueueItsSendsNeedNotAFetchingOnes() throws Exception {
        EngineConfig config = EngineConfig.defaults().set(EngineConfig.KEY_PROVIDER, "software");
        try (SoftwareProvider sp = new SoftwareProvider(SoftwareProvider.Config.loopback())) {
            VerbsContext ctx = sp.devices().getFirst().open();
            CompletionPoller poller = new CompletionPoller(ctx, "test-poller", 1024, 16, Duration.ZERO, (wcs, n) -> { });
            TenantDomain tenant = new TenantDomain(ctx, 0, "app", "app", config, MemoryRegistration.PINNED);
            QueuePairFactory factory = new QueuePairFactory(new CompletionPoller[] {poller}, 256, 128, 16,
                    EngineConfig.PostPath.BUILDER);
            try (QueuePair serving = factory.create(tenant, DataConnection.Role.SERVING);
                 QueuePair fetching = factory.create(tenant, DataConnection.Role.FETCHING)) {
                QueuePairCapabilities s = serving.capabilities();
                QueuePairCapabilities f = fetching.capabilities();
                assertEquals(128, s.maxSendWr(), "serving send queue");
                assertEquals(1, s.maxSendSge(), "serving SGEs per request");
                assertEquals(256, f.maxSendWr(), "fetching send queue");
                assertEquals(16, f.maxSendSge(), "fetching SGEs per request");
            } finally {
                tenant.close();
                poller.close();
                ctx.close();
            }
        }
    }
}
