import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus
import Shared

/// A named readiness check behind `GET /health/ready`.
package struct HealthCheck: Sendable {
    package var name: String
    package var check: @Sendable () async -> Bool

    package init(_ name: String, _ check: @escaping @Sendable () async -> Bool) {
        self.name = name
        self.check = check
    }
}

/// `GET /health/live`, `GET /health/ready` (and `GET /health`, the same) and `GET /metrics`, which every service serves.
package enum OpsEndpoints {
    /// `/health/live` answers 200 whenever the process answers: what a container's health check and a restart policy
    /// should look at (a Kafka outage must not restart every container, it would not bring Kafka back).
    /// `/health/ready` answers 200 `{"status":"ok",…}` when every check passes (Kafka reachable; for the consumers, a
    /// first assignment received and opened), else 503 `{"status":"unavailable",…}` naming the failing checks: what a
    /// load balancer should look at. `/health` is the readiness answer, as before the split. `/metrics` is the
    /// Prometheus text format (`MetricsExposition`), with the readiness of the moment as `herald_ready` (1 or 0): what
    /// an alert rule reads, where a scrape cannot see the status code of `/health/ready`.
    package static func register<Context: RequestContext>(
        on router: Router<Context>,
        operatorRoutes: RouterGroup<Context>,
        service: String,
        checks: [HealthCheck],
        registry: PrometheusCollectorRegistry
    ) {
        router.get("health/live") { _, _ -> Response in
            try jsonResponse(HealthBody(status: "ok", service: service, checks: [:]), status: .ok)
        }
        let readyGauge = Gauge(label: "herald_ready")
        @Sendable func readiness() async -> [(String, Bool)] {
            var results: [(String, Bool)] = []
            for check in checks { results.append((check.name, await check.check())) }
            readyGauge.record(results.allSatisfy(\.1) ? 1 : 0)
            return results
        }
        @Sendable func ready() async throws -> Response {
            let results = await readiness()
            let healthy = results.allSatisfy(\.1)
            let body = HealthBody(
                status: healthy ? "ok" : "unavailable",
                service: service,
                checks: Dictionary(uniqueKeysWithValues: results.map { ($0.0, $0.1 ? "up" : "down") }))
            return try jsonResponse(body, status: healthy ? .ok : .serviceUnavailable)
        }
        router.get("health/ready") { _, _ in try await ready() }
        router.get("health") { _, _ in try await ready() }
        operatorRoutes.get("metrics") { _, _ -> Response in
            _ = await readiness()
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(
                    byteBuffer: ByteBuffer(bytes: MetricsExposition.text(registry, service: MetricCatalog.Service(rawValue: service)))))
        }
    }

    private struct HealthBody: Encodable {
        var status: String
        var service: String
        var checks: [String: String]
    }

    static func jsonResponse(_ value: some Encodable, status: HTTPResponse.Status) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
