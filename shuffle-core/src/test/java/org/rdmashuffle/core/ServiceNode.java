package org.rdmashuffle.core;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.rdmashuffle.verbs.VerbsProvider;

/**
 * A node's shuffle service knowing applications a and b, a provider for it and one for reducers,
 * and the reducer engines a test starts ({@link #reducer}); closes them all, reducers first, and
 * checks the service left no connection behind.
 */
class ServiceNode implements AutoCloseable {
    static final byte[] SECRET_A = "secret-of-application-a-0123456789".getBytes(StandardCharsets.US_ASCII);
    static final byte[] SECRET_B = "secret-of-application-b-0123456789".getBytes(StandardCharsets.US_ASCII);

    final Map<String, byte[]> secrets = new ConcurrentHashMap<>(Map.of("app-a", SECRET_A, "app-b", SECRET_B));
    final VerbsProvider serviceProvider = EngineTestSupport.provider();
    final VerbsProvider clientProvider = EngineTestSupport.provider();
    final RdmaShuffleEngine service;
    private final List<RdmaShuffleEngine> reducers = new ArrayList<>();

    ServiceNode() {
        this(EngineTestSupport.smallConfig());
    }

    ServiceNode(org.rdmashuffle.core.config.EngineConfig serviceConfig) {
        this.service = RdmaShuffleEngine.startService(serviceConfig, secrets::get, serviceProvider);
    }

    /** An executor's engine of {@code app} on the reducers' provider, closed with the node. */
    RdmaShuffleEngine reducer(String app, byte[] secret) {
        return reducer(app, secret, EngineTestSupport.smallConfig());
    }

    /** As {@link #reducer(String, byte[])}, with {@code config}. */
    RdmaShuffleEngine reducer(String app, byte[] secret, org.rdmashuffle.core.config.EngineConfig config) {
        RdmaShuffleEngine e = RdmaShuffleEngine.start(config, app, secret, clientProvider);
        reducers.add(e);
        return e;
    }

    @Override
    public void close() {
        try {
            reducers.forEach(RdmaShuffleEngine::close);
            service.close();
            EngineTestSupport.assertNoConnectionsLeft(serviceProvider);
        } finally {
            EngineTestSupport.closeProvider(clientProvider);
            EngineTestSupport.closeProvider(serviceProvider);
        }
    }
}
