package org.rdmashuffle.core.server;

import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * How much of what is counted by number each application and each user holds on a serving engine,
 * against {@link ServiceLimits}: data connections (queue pairs set up by a CONNECT), authenticated
 * control connections, fetch requests being answered off the poller (each held in the heap, with its
 * blocks, until answered: counted in requests and in bytes), tenants (an application's device
 * resources, from their making until they are freed) and memory windows, each bounded per
 * application, per user and for the node. A refusal says which bound was reached, in words a peer may
 * read (no count of other tenants). Thread-safe.
 *
 * <p>Every count is kept with the user it was charged to: an application's counts remember the user
 * they were charged to when the first was taken, and removals go to that user, never to whoever
 * {@code userOf} names at removal time (by then both services may have forgotten the application, and
 * name it its own user: its removals would have been charged to a user named after the application,
 * and the real user's counts would have stayed for ever).
 */
public final class ServiceUsage {
    /** What is counted, and how a refusal names it. */
    public enum Kind {
        CONTROL("control connections"), DATA("connections"), REQUESTS("requests"), REQUEST_BYTES("bytes of requests"),
        TENANTS("applications"), WINDOWS("memory windows");

        final String words;

        Kind(String words) {
            this.words = words;
        }
    }

    /** One kind's bounds. */
    public record Bound(long perApplication, long perUser, long node) {
    }

    /** An application's count of one kind, with the user it was charged to. */
    private static final class Held {
        final String user;
        long count;

        Held(String user) {
            this.user = user;
        }
    }

    private final Map<Kind, Bound> bounds = new EnumMap<>(Kind.class);
    private final Function<String, String> userOf;
    /** Per kind: counts by application (each with its user), by user, and the node's; guarded by this. */
    private final Map<Kind, Map<String, Held>> byApp = new EnumMap<>(Kind.class);
    private final Map<Kind, Map<String, Long>> byUser = new EnumMap<>(Kind.class);
    private final Map<Kind, Long> total = new EnumMap<>(Kind.class);

    /** @param userOf an application's user (the application itself where users are not known) */
    public ServiceUsage(ServiceLimits limits, Function<String, String> userOf) {
        this.userOf = userOf;
        Bound connections = new Bound(limits.connectionsPerApplication(), limits.connectionsPerUser(), limits.connections());
        bounds.put(Kind.CONTROL, connections);
        bounds.put(Kind.DATA, connections);
        bounds.put(Kind.REQUESTS, limits.requests());
        bounds.put(Kind.REQUEST_BYTES, limits.requestBytes());
        bounds.put(Kind.TENANTS, limits.tenants());
        bounds.put(Kind.WINDOWS, limits.windows());
        for (Kind k : Kind.values()) {
            byApp.put(k, new HashMap<>());
            byUser.put(k, new HashMap<>());
            total.put(k, 0L);
        }
    }

    /** Counts one more {@code kind} for {@code app}: null if it is admitted, else why not. */
    public String tryAdd(Kind kind, String app) {
        return tryAdd(kind, app, 1);
    }

    /** Counts {@code n} more {@code kind} for {@code app}: null if admitted, else why not (nothing counted). */
    public synchronized String tryAdd(Kind kind, String app, long n) {
        String full = refusal(kind, app, n);
        if (full == null) {
            add(kind, app, n);
        }
        return full;
    }

    /**
     * Counts several kinds for {@code app} at once ({@code kinds[i]} by {@code amounts[i]}): all or
     * nothing; null if admitted, else why not.
     */
    public synchronized String tryAdd(String app, Kind[] kinds, long[] amounts) {
        for (int i = 0; i < kinds.length; i++) {
            String full = refusal(kinds[i], app, amounts[i]);
            if (full != null) {
                return full;
            }
        }
        for (int i = 0; i < kinds.length; i++) {
            add(kinds[i], app, amounts[i]);
        }
        return null;
    }

    /** The user {@code app}'s counts of {@code kind} are charged to now (the one remembered while it holds any). */
    public synchronized String chargedTo(Kind kind, String app) {
        return chargedUser(kind, app);
    }

    public Bound bound(Kind kind) {
        return bounds.get(kind);
    }

    /** The user {@code app}'s counts of {@code kind} go to: the one they were charged to while it holds any. */
    private String chargedUser(Kind kind, String app) {
        Held h = byApp.get(kind).get(app);
        return h != null ? h.user : userOf.apply(app);
    }

    private String refusal(Kind kind, String app, long n) {
        Bound b = bounds.get(kind);
        Held h = byApp.get(kind).get(app);
        long mine = h == null ? 0 : h.count;
        long users = byUser.get(kind).getOrDefault(chargedUser(kind, app), 0L);
        if (mine + n > b.perApplication()) {
            return "the server already has as many " + kind.words + " of this application as it may";
        }
        if (users + n > b.perUser()) {
            return "the server already has as many " + kind.words + " of this application's user as it may";
        }
        if (total.get(kind) + n > b.node()) {
            return "the server already has as many " + kind.words + " as it may";
        }
        return null;
    }

    private void add(Kind kind, String app, long n) {
        Held h = byApp.get(kind).computeIfAbsent(app, a -> new Held(userOf.apply(a)));
        h.count += n;
        byUser.get(kind).merge(h.user, n, Long::sum);
        total.merge(kind, n, Long::sum);
    }

    /** Counts one {@code kind} of {@code app} out (one that {@link #tryAdd} admitted). */
    public void remove(Kind kind, String app) {
        remove(kind, app, 1);
    }

    /** Counts {@code n} of {@code kind} of {@code app} out, from the user they were charged to. */
    public synchronized void remove(Kind kind, String app, long n) {
        Held h = byApp.get(kind).get(app);
        if (h == null) {
            return; // nothing of it counted (a bug elsewhere): never charge another user for it
        }
        long out = Math.min(n, h.count);
        h.count -= out;
        if (h.count == 0) {
            byApp.get(kind).remove(app);
        }
        byUser.get(kind).computeIfPresent(h.user, (k, v) -> v > out ? v - out : null);
        total.merge(kind, -out, Long::sum);
    }

    public synchronized long count(Kind kind) {
        return total.get(kind);
    }

    public synchronized long count(Kind kind, String app) {
        Held h = byApp.get(kind).get(app);
        return h == null ? 0 : h.count;
    }

    /** What {@code user}'s applications hold of {@code kind} now. */
    public synchronized long countOfUser(Kind kind, String user) {
        return byUser.get(kind).getOrDefault(user, 0L);
    }

    public String userOf(String app) {
        return userOf.apply(app);
    }
}
