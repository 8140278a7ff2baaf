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
 * checks the service left no connection behind. Each application is its own user unless a test
 * names its user ({@link #start}): applications sharing a user share that user's bounds, as on a
 * NodeManager, and a stopped one is forgotten as the services forget it ({@link #stop}).
 */
class ServiceNode implements AutoCloseable {
    static final byte[] SECRET_A = "secret-of-application-a-0123456789".getBytes(StandardCharsets.US_ASCII);
    static final byte[] SECRET_B = "secret-of-application-b-0123456789".getBytes(StandardCharsets.US_ASCII);

    final Map<String, byte[]> secrets = new ConcurrentHashMap<>(Map.of("app-a", SECRET_A, "app-b", SECRET_B));
    /** Applications' users, as YARN names them; an application not here is its own user. */
    final Map<String, String> users = new ConcurrentHashMap<>();
    final VerbsProvider serviceProvider = EngineTestSupport.provider();
    final VerbsProvider clientProvider = EngineTestSupport.provider();
    final RdmaShuffleEngine service;
    private final List<RdmaShuffleEngine> reducers = new ArrayList<>();

    ServiceNode() {
        this(EngineTestSupport.smallConfig());
    }

    ServiceNode(org.rdmashuffle.core.config.EngineConfig serviceConfig) {
        this.service = RdmaShuffleEngine.startService(serviceConfig, new ServedApplications() {
            @Override
            public byte[] secret(String app) {
                return secrets.get(app);
            }

            @Override
            public String user(String app) {
                return users.getOrDefault(app, app);
            }
        }, serviceProvider);
    }

    /** Serves {@code app} of {@code user} from now on; returns its secret. */
    byte[] start(String app, String user) {
        byte[] secret = ("secret-of-" + app + "-0123456789abcdef").getBytes(StandardCharsets.US_ASCII);
        users.put(app, user);
        secrets.put(app, secret);
        return secret;
    }

    /**
     * Stops {@code app} as a service does: its secret and user forgotten, and its tenant ended. The
     * user is forgotten first: what the engine counts out for a stopped application it does on its own
     * threads after the stop returns, by when a service has forgotten the user too.
     */
    void stop(String app) {
        secrets.remove(app);
        users.remove(app);
        service.unregisterApplication(app);
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
