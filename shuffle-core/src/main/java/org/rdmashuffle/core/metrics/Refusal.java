package org.rdmashuffle.core.metrics;

/**
 * Why a server refused a block (a fetch request's ErrorResponse), as operators count them: one
 * metric per kind, named by {@link #metricName()}. The reducer is told the same kind in words.
 */
public enum Refusal {
    NO_SUCH_OUTPUT("noSuchOutput"),
    PARTITION_RANGE("partitionRange"),
    REGISTERED_MEMORY_EXHAUSTED("registeredMemoryExhausted"),
    INDEX_MEMORY_EXHAUSTED("indexMemoryExhausted"),
    LOOKUP_TIMEOUT("lookupTimeout"),
    BUSY("busy"),
    FILE_REFUSED("fileRefused"),
    FILE_UNREADABLE("fileUnreadable"),
    REGISTRATION_FAILED("registrationFailed"),
    CLOSING("closing"),
    INDEX_INCONSISTENT("indexInconsistent"),
    /**
     * Its outputs kept being released before all were described (registered memory too short for the
     * request), or it named more blocks than an answer to its connection holds (a reducer of an earlier
     * version with a larger receive buffer than the server's, or a hostile one).
     */
    REQUEST_TOO_LARGE("requestTooLarge");

    private final String metricName;

    Refusal(String metricName) {
        this.metricName = metricName;
    }

    public String metricName() {
        return metricName;
    }
}
