package org.rdmashuffle.hadoop;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One scrape of the node's Prometheus exposition over HTTP, as Prometheus makes it (text format 0.0.4),
 * and its samples read back: name, labels, value. The names' conformance is promtool's to check
 * ({@link Promtool}); this reads what the values are.
 */
record Scrape(String text, List<Sample> samples) {
    record Sample(String name, Map<String, String> labels, double value) {
    }

    static Scrape of(InetSocketAddress at) throws IOException, InterruptedException {
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build()) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + at.getPort()
                    + NodePrometheusExporter.PATH)).header("Accept", "text/plain; version=0.0.4").timeout(Duration.ofSeconds(20))
                    .build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IOException("HTTP " + r.statusCode() + " from the exposition: " + r.body());
            }
            return parse(r.body());
        }
    }

    static Scrape parse(String text) {
        List<Sample> samples = new ArrayList<>();
        for (String line : text.lines().toList()) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int brace = line.indexOf('{');
            int space = line.lastIndexOf(' ');
            String name;
            Map<String, String> labels = new LinkedHashMap<>();
            if (brace >= 0 && brace < space) {
                name = line.substring(0, brace);
                String body = line.substring(brace + 1, line.lastIndexOf('}'));
                int i = 0;
                while (i < body.length()) {
                    int eq = body.indexOf('=', i);
                    String key = body.substring(i, eq);
                    StringBuilder value = new StringBuilder();
                    int j = eq + 2; // past ="
                    while (body.charAt(j) != '"') {
                        if (body.charAt(j) == '\\') {
                            j++;
                            value.append(body.charAt(j) == 'n' ? '\n' : body.charAt(j));
                        } else {
                            value.append(body.charAt(j));
                        }
                        j++;
                    }
                    labels.put(key, value.toString());
                    i = j + 1;
                    if (i < body.length() && body.charAt(i) == ',') {
                        i++;
                    }
                }
            } else {
                name = line.substring(0, space);
            }
            samples.add(new Sample(name, labels, Double.parseDouble(line.substring(space + 1))));
        }
        return new Scrape(text, samples);
    }

    /** The samples of {@code name} whose labels include all of {@code having}. */
    List<Sample> find(String name, Map<String, String> having) {
        return samples.stream().filter(s -> s.name.equals(name) && s.labels.entrySet().containsAll(having.entrySet()))
                .collect(Collectors.toList());
    }

    /** The one sample of {@code name} with {@code having}'s labels; fails if there is none or more. */
    double value(String name, Map<String, String> having) {
        List<Sample> found = find(name, having);
        if (found.size() != 1) {
            throw new AssertionError(found.size() + " samples of " + name + " " + having + " in the scrape:\n" + text);
        }
        return found.get(0).value;
    }
}
