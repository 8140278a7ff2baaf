package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** Serving through the node's service needs Spark's shuffle service and authentication: each missing one is named. */
class ServiceSettingsTest {
    private static SparkConf conf(boolean shuffleService, boolean authenticate) {
        return new SparkConf(false).set(RdmaShuffleManager.SERVICE_ENABLED, "true")
                .set("spark.shuffle.service.enabled", Boolean.toString(shuffleService))
                .set("spark.authenticate", Boolean.toString(authenticate));
    }

    @Test
    void withoutSparksShuffleService_theErrorSaysOutputsWouldBeForgotten() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EngineShuffleManager.requireServiceSettings(conf(false, true)));
        assertTrue(e.getMessage().contains("spark.shuffle.service.enabled=true"), e.getMessage());
    }

    @Test
    void withoutAuthentication_theErrorSaysTheServiceWouldNotServe() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EngineShuffleManager.requireServiceSettings(conf(true, false)));
        assertTrue(e.getMessage().contains("spark.authenticate=true"), e.getMessage());
        assertDoesNotThrow(() -> EngineShuffleManager.requireServiceSettings(conf(true, true)));
    }
}
