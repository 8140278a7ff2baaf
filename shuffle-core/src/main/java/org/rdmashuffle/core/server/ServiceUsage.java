package org.rdmashuffle.core.server;

import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * How much of what is counted by number each application and each user holds on a serving engine,
 * against {@link ServiceLimits}: data connections (queue pairs set up by a CONNECT), authenticated
 * control connections, and the blocks of fetch requests being answered off the poller (each held in
 * the heap until answered), each bounded per application, per user and for the node. A refusal says
 * which bound was reached, in words a peer may read (no count of other tenants). Thread-safe.
 */
public final class ServiceUsage {
    /** What is counted, and how a refusal names it. */
    public enum Kind {
        CONTROL("control connections"), DATA("connections"), REQUEST_BLOCKS("blocks asked for");

        final String words;

        Kind(String words) {
            this.words = words;
        }
    }

    /** One kind's bounds. */
    public record Bound(int perApplication, int perUser, int node) {
    }

    private final Map<Kind, Bound> bounds = new EnumMap<>(Kind.class);
    private final Function<String, String> userOf;
    /** Per kind: counts by application, by user, and the node's; guarded by this. */
    private final Map<Kind, Map<String, Integer>> byApp = new EnumMap<>(Kind.class);
    private final Map<Kind, Map<String, Integer>> byUser = new EnumMap<>(Kind.class);
    private final Map<Kind, Integer> total = new EnumMap<>(Kind.class);

    /** @param userOf an application's user (the application itself where users are not known) */
    public ServiceUsage(ServiceLimits limits, Function<String, String> userOf) {
        this.userOf = userOf;
        Bound connections = new Bound(limits.connectionsPerApplication(), limits.connectionsPerUser(), limits.connections());
        bounds.put(Kind.CONTROL, connections);
        bounds.put(Kind.DATA, connections);
        bounds.put(Kind.REQUEST_BLOCKS, limits.requestBlocks());
        for (Kind k : Kind.values()) {
            byApp.put(k, new HashMap<>());
            byUser.put(k, new HashMap<>());
            total.put(k, 0);
        }
    }

    /** Counts one more {@code kind} for {@code app}: null if it is admitted, else why not. */
    public String tryAdd(Kind kind, String app) {
        return tryAdd(kind, app, 1);
    }

    /** Counts {@code n} more {@code kind} for {@code app}: null if admitted, else why not (nothing counted). */
    public synchronized String tryAdd(Kind kind, String app, int n) {
        Bound b = bounds.get(kind);
        String user = userOf.apply(app);
        int mine = byApp.get(kind).getOrDefault(app, 0);
        int users = byUser.get(kind).getOrDefault(user, 0);
        if (mine + n > b.perApplication()) {
            return "the server already has as many " + kind.words + " of this application as it may";
        }
        if (users + n > b.perUser()) {
            return "the server already has as many " + kind.words + " of this application's user as it may";
        }
        if (total.get(kind) + n > b.node()) {
            return "the server already has as many " + kind.words + " as it may";
        }
        byApp.get(kind).put(app, mine + n);
        byUser.get(kind).put(user, users + n);
        total.put(kind, total.get(kind) + n);
        return null;
    }

    /** Counts one {@code kind} of {@code app} out (one that {@link #tryAdd} admitted). */
    public void remove(Kind kind, String app) {
        remove(kind, app, 1);
    }

    public synchronized void remove(Kind kind, String app, int n) {
        String user = userOf.apply(app);
        byApp.get(kind).computeIfPresent(app, (k, v) -> v > n ? v - n : null);
        byUser.get(kind).computeIfPresent(user, (k, v) -> v > n ? v - n : null);
        total.put(kind, total.get(kind) - n);
    }

    public synchronized int count(Kind kind) {
        return total.get(kind);
    }

    public synchronized int count(Kind kind, String app) {
        return byApp.get(kind).getOrDefault(app, 0);
    }

    public String userOf(String app) {
        return userOf.apply(app);
    }
}
