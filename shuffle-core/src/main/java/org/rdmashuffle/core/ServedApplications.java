package org.rdmashuffle.core;

/**
 * What a node's shuffle service knows of the applications it serves: each one's shared secret (its
 * reducers must prove they hold it) and its user (whose share of the node the application's resources
 * count against: a user running several applications still gets one user's share).
 */
public interface ServedApplications {
    /** The application's secret, or null for an application this node does not serve (now). */
    byte[] secret(String app);

    /** The application's user; the application itself where users are not known. */
    default String user(String app) {
        return app;
    }
}
