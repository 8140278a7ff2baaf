package org.rdmashuffle.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

/** The secret line of conf/spark-defaults.conf is a placeholder the engine will not authenticate with. */
class ShippedSecretTest {
    @Test
    void theShippedPlaceholderSecret_isRefusedByName_andAChosenOneIsUsed() throws IOException {
        String shipped = Files.readAllLines(Path.of("../conf/spark-defaults.conf")).stream()
                .filter(l -> l.startsWith("spark.authenticate.secret ")).map(l -> l.split("\\s+")[1]).findFirst()
                .orElseThrow(() -> new AssertionError("conf/spark-defaults.conf has no spark.authenticate.secret line"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> EngineShuffleManager.requireChosenSecret(shipped));
        assertTrue(e.getMessage().contains("placeholder") && e.getMessage().contains("openssl rand"), e.getMessage());
        String chosen = "3f1c0b9e6d5a47e2b8c1d0f9a6e5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7";
        assertEquals(chosen, EngineShuffleManager.requireChosenSecret(chosen));
    }
}
