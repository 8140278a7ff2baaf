package org.rdmashuffle.core.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.Test;
import org.rdmashuffle.core.config.EngineConfig;

/**
 * The counts a serving engine keeps by number: each is kept with the user it was charged to, and a
 * user's applications together are bounded as one.
 */
class ServiceUsageTest {
    private final Map<String, String> users = new ConcurrentHashMap<>();

    private ServiceUsage usage(EngineConfig config) {
        return new ServiceUsage(ServiceLimits.of(config), app -> users.getOrDefault(app, app));
    }

    /**
     * Both services forget a stopped application before the engine counts its connections out; the
     * removal then looked its user up again and found the application's own name: the real user kept
     * the count for ever. Removals go to the user the count was charged to.
     */
    @Test
    void aRemovalAfterTheApplicationsUserWasForgottenGoesToTheUserItWasChargedTo() {
        ServiceUsage u = usage(EngineConfig.defaults().set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_APPLICATION, "2")
                .set(EngineConfig.KEY_MAX_SERVED_CONNECTIONS_PER_USER, "2"));
        for (String app : new String[] {"app-1", "app-2"}) {
            users.put(app, "alice");
            assertNull(u.tryAdd(ServiceUsage.Kind.DATA, app));
            users.remove(app); // the services forgot it: it is its own user now
            u.remove(ServiceUsage.Kind.DATA, app);
            assertEquals(0, u.countOfUser(ServiceUsage.Kind.DATA, "alice"));
            assertEquals(0, u.countOfUser(ServiceUsage.Kind.DATA, app));
        }
        users.put("app-3", "alice");
        assertNull(u.tryAdd(ServiceUsage.Kind.DATA, "app-3"));
        assertNull(u.tryAdd(ServiceUsage.Kind.DATA, "app-3"), "alice locked out by counts her stopped applications left");
        assertEquals(2, u.count(ServiceUsage.Kind.DATA));
    }

    /** A removal of more than was counted, or for an application never counted, charges nobody. */
    @Test
    void aRemovalOfWhatWasNeverCountedChargesNobody() {
        ServiceUsage u = usage(EngineConfig.defaults());
        users.put("app-1", "alice");
        assertNull(u.tryAdd(ServiceUsage.Kind.REQUESTS, "app-1", 3));
        u.remove(ServiceUsage.Kind.REQUESTS, "app-2", 5);
        u.remove(ServiceUsage.Kind.REQUESTS, "app-1", 5);
        assertEquals(0, u.count(ServiceUsage.Kind.REQUESTS));
        assertEquals(0, u.countOfUser(ServiceUsage.Kind.REQUESTS, "alice"));
        assertNull(u.tryAdd(ServiceUsage.Kind.REQUESTS, "app-1", 1));
        assertEquals(1, u.count(ServiceUsage.Kind.REQUESTS), "the node's count never went below zero");
    }

    /**
     * Waiting requests are bounded in number and in bytes, per application, per user (twice) and for
     * the node (eight times): one user's applications together hold twice one's, all or nothing.
     */
    @Test
    void oneUsersApplicationsTogetherWaitNoMoreRequestsThanTheUsersShare() {
        ServiceUsage u = usage(EngineConfig.defaults());
        ServiceUsage.Kind[] kinds = {ServiceUsage.Kind.REQUESTS, ServiceUsage.Kind.REQUEST_BYTES};
        long perApplication = ServiceLimits.REQUESTS_PER_APPLICATION;
        for (String app : new String[] {"app-1", "app-2", "app-3"}) {
            users.put(app, "alice");
        }
        assertNull(u.tryAdd("app-1", kinds, new long[] {perApplication, 1}));
        assertNotNull(u.tryAdd("app-1", kinds, new long[] {1, 1}), "past the application's bound");
        assertNull(u.tryAdd("app-2", kinds, new long[] {perApplication, 1}));
        String full = u.tryAdd("app-3", kinds, new long[] {1, 1});
        assertNotNull(full);
        assertTrue(full.contains("of this application's user"), full);
        assertEquals(0, u.count(ServiceUsage.Kind.REQUEST_BYTES, "app-3"), "a refusal counts nothing of any kind");
        assertNull(u.tryAdd("app-b", kinds, new long[] {1, 1}), "another user waits");
        String bytes = u.tryAdd("app-c", kinds, new long[] {1, ServiceLimits.REQUEST_BYTES_PER_APPLICATION + 1});
        assertTrue(bytes != null && bytes.contains("bytes of requests"), bytes);
    }
}
