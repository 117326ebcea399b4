import Foundation
import HeraldTestSupport
import Testing
import Yams

/// deploy/kubernetes, checked without a cluster: each manifest against the Kubernetes API's own schemas
/// (`kubernetes-validate --strict`, from PyPI in .venv), then read as data for what the schemas cannot know: volumes
/// where the data directory is, probes on the health endpoints, a grace period longer than the notifier's drain,
/// memory limits above the measured peaks, selectors that select, secrets the README tells how to create.
@Suite("Kubernetes manifests")
struct KubernetesTests {
    static let directory = "deploy/kubernetes"

    @Test("every manifest passes kubernetes-validate --strict, and the kustomization lists every one of them")
    func schemas() async throws {
        let manifests = try Self.manifestFiles()
        #expect(manifests.count >= 6)
        let validator = repositoryFile(".venv/bin/kubernetes-validate")
        try #require(FileManager.default.isExecutableFile(atPath: validator), "run scripts/setup.sh: \(validator) is missing")
        let (status, output) = try await runCommand(
            validator, ["--strict", "--kubernetes-version", "1.30.0"] + manifests.map { repositoryFile("\(Self.directory)/\($0)") })
        #expect(status == 0 && !output.contains("ERROR"), "\(output)")

        let kustomization = try #require(try Self.documents("kustomization.yaml").first)
        #expect(kustomization["kind"] as? String == "Kustomization")
        #expect(Set(kustomization["resources"] as? [String] ?? []) == Set(manifests))
        // Every image a container names is one the kustomization maps to a registry.
        let mapped = Set((kustomization["images"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
        for (_, pod) in try Self.podTemplates() {
            for container in Self.containers(pod) { #expect(mapped.contains(container["image"] as? String ?? ""), "\(container["image"] ?? "")") }
        }
    }

    @Test("the judge refuses a manifest with a misspelled field or a value of the wrong type")
    func judgeRefuses() async throws {
        let scratch = try scratchDirectory("herald-kubernetes")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let ingest = try String(contentsOfFile: repositoryFile("\(Self.directory)/ingest.yaml"), encoding: .utf8)
        for (name, broken) in [
            ("field", ingest.replacingOccurrences(of: "periodSeconds: 10", with: "periodSecond: 10")),
            ("type", ingest.replacingOccurrences(of: "replicas: 2", with: "replicas: two")),
        ] {
            #expect(broken != ingest)
            try Data(broken.utf8).write(to: URL(fileURLWithPath: "\(scratch)/\(name).yaml"))
            let (status, output) = try await runCommand(
                repositoryFile(".venv/bin/kubernetes-validate"), ["--strict", "--kubernetes-version", "1.30.0", "\(scratch)/\(name).yaml"])
            #expect(status != 0 && output.contains("ERROR"), "\(name): \(output)")
        }
    }

    @Test("ingest: a Deployment the autoscaler grows, behind a Service; orchestrator and notifier: StatefulSets with a volume per pod at their data directory")
    func workloads() throws {
        let objects = try Self.allObjects()
        let ingest = try #require(Self.object(objects, kind: "Deployment", name: "herald-ingest"))
        let autoscaler = try #require(Self.object(objects, kind: "HorizontalPodAutoscaler", name: "herald-ingest"))
        let target = Self.map(Self.map(autoscaler["spec"])["scaleTargetRef"])
        #expect(target["kind"] as? String == "Deployment" && target["name"] as? String == "herald-ingest")
        #expect((Self.map(autoscaler["spec"])["minReplicas"] as? Int ?? 0) >= 2)
        #expect(Self.map(Self.map(ingest["spec"])["strategy"]).isEmpty == false)

        for name in ["herald-orchestrator", "herald-notifier"] {
            let set = try #require(Self.object(objects, kind: "StatefulSet", name: name), "\(name) is a StatefulSet")
            let spec = Self.map(set["spec"])
            let claims = (spec["volumeClaimTemplates"] as? [[String: Any]] ?? []).compactMap { Self.map($0["metadata"])["name"] as? String }
            let container = try #require(Self.containers(Self.map(Self.map(spec["template"])["spec"])).first)
            let dataDirectory = try #require(Self.env(container)["HERALD_DATA_DIR"])
            let mounts = (container["volumeMounts"] as? [[String: Any]] ?? [])
            let dataMount = try #require(mounts.first { $0["mountPath"] as? String == dataDirectory }, "\(name): nothing at \(dataDirectory)")
            #expect(claims.contains(dataMount["name"] as? String ?? ""), "\(name): its data directory is a claim of its own")
            #expect(spec["podManagementPolicy"] as? String == "Parallel")
            let service = try #require(Self.object(objects, kind: "Service", name: spec["serviceName"] as? String ?? ""))
            #expect(Self.map(service["spec"])["clusterIP"] as? String == "None", "\(name): a headless service names its pods")
        }
    }

    @Test("every long-running container: probes on /health/live and /health/ready at its port, non-root, read-only root, requests and limits")
    func containers() throws {
        for (name, pod) in try Self.podTemplates() {
            let podSecurity = Self.map(pod["securityContext"])
            #expect(podSecurity["runAsNonRoot"] as? Bool == true, "\(name)")
            for container in Self.containers(pod) {
                let security = Self.map(container["securityContext"])
                #expect(security["readOnlyRootFilesystem"] as? Bool == true, "\(name)")
                #expect(security["allowPrivilegeEscalation"] as? Bool == false, "\(name)")
                #expect(Self.map(security["capabilities"])["drop"] as? [String] == ["ALL"], "\(name)")
                let resources = Self.map(container["resources"])
                for part in ["requests", "limits"] {
                    #expect(Self.map(resources[part])["cpu"] != nil && Self.map(resources[part])["memory"] != nil, "\(name): \(part)")
                }
                guard name != "herald-config-apply" else { continue }
                let port = try #require(Self.env(container)["HERALD_HTTP_PORT"].flatMap { Int($0) }, "\(name)")
                let ports = container["ports"] as? [[String: Any]] ?? []
                #expect(ports.contains { $0["name"] as? String == "http" && $0["containerPort"] as? Int == port }, "\(name)")
                for (probe, path) in [("livenessProbe", "/health/live"), ("readinessProbe", "/health/ready")] {
                    let get = Self.map(Self.map(container[probe])["httpGet"])
                    #expect(get["path"] as? String == path && get["port"] as? String == "http", "\(name): \(probe)")
                }
                #expect(Self.env(container)["HERALD_OPERATOR_TOKEN"] == "secret herald-operator/token", "\(name)")
            }
        }
    }

    @Test("memory limits stand above the peaks docs/performance.md measured, and requests above the resident sizes")
    func memoryFromMeasurements() throws {
        // The Memory table's row with the most profiles: orchestrator "resident / peak", notifier "resident / peak", ingest.
        let performance = try String(contentsOfFile: repositoryFile("docs/performance.md"), encoding: .utf8)
        let rows = performance.split(separator: "\n").filter { $0.hasPrefix("| ") && $0.contains(" / ") }
        let figures = rows.compactMap { row -> (profiles: Int, numbers: [Int])? in
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 5, let profiles = Int(cells[1].replacingOccurrences(of: ",", with: "")) else { return nil }
            let numbers = cells[2...].flatMap { $0.split(separator: "/").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
            return numbers.count == 5 ? (profiles, numbers) : nil
        }
        let largest = try #require(figures.max { $0.profiles < $1.profiles }, "the Memory table of docs/performance.md")
        let measured: [String: (resident: Int, peak: Int)] = [
            "herald-orchestrator": (largest.numbers[0], largest.numbers[1]),
            "herald-notifier": (largest.numbers[2], largest.numbers[3]),
            // The ingest's figure is at rest; its bodies in flight (HERALD_MAX_IN_FLIGHT_BYTES, 32 MiB) come on top.
            "herald-ingest": (largest.numbers[4], largest.numbers[4] + 32),
        ]
        let pods = try Self.podTemplates()
        for (name, figure) in measured {
            let pod = try #require(pods.first { $0.name == name }?.pod)
            let resources = Self.map(try #require(Self.containers(pod).first)["resources"])
            let request = try Self.mebibytes(Self.map(resources["requests"])["memory"] as? String ?? "")
            let limit = try Self.mebibytes(Self.map(resources["limits"])["memory"] as? String ?? "")
            #expect(request >= figure.resident, "\(name): requests \(request) MiB, measured \(figure.resident) MiB resident")
            #expect(Double(limit) >= Double(figure.peak) * 1.5, "\(name): limit \(limit) MiB, measured peak \(figure.peak) MiB")
        }
    }

    @Test("a stopping notifier has longer than its drain; each disruption budget and service selects pods that exist")
    func stoppingAndSelecting() throws {
        let objects = try Self.allObjects()
        let notifier = try #require(try Self.podTemplates().first { $0.name == "herald-notifier" }?.pod)
        let container = try #require(Self.containers(notifier).first)
        let drain = try #require(Self.env(container)["HERALD_DRAIN_TIMEOUT_MS"].flatMap { Int($0) })
        let grace = try #require(notifier["terminationGracePeriodSeconds"] as? Int)
        #expect(grace * 1000 >= drain + 15_000, "grace \(grace) s, drain \(drain) ms: the consumer still has to leave its group")

        let workloads = objects.filter { ["Deployment", "StatefulSet"].contains($0["kind"] as? String) }
        func selects(_ selector: [String: Any]) -> Bool {
            workloads.contains { workload in
                let spec = Self.map(workload["spec"])
                let labels = Self.map(Self.map(Self.map(spec["template"])["metadata"])["labels"])
                return selector.allSatisfy { key, value in
                    // The pod-name label the StatefulSet controller gives each pod: <name>-<ordinal below replicas>.
                    if key == "statefulset.kubernetes.io/pod-name", let pod = value as? String {
                        let name = Self.map(workload["metadata"])["name"] as? String ?? ""
                        let ordinal = pod.hasPrefix(name + "-") ? Int(pod.dropFirst(name.count + 1)) : nil
                        return ordinal.map { $0 < (spec["replicas"] as? Int ?? 1) } ?? false
                    }
                    return labels[key] as? String == value as? String
                }
            }
        }
        for object in objects {
            let name = "\(object["kind"] ?? "") \(Self.map(object["metadata"])["name"] ?? "")"
            switch object["kind"] as? String {
            case "Service": #expect(selects(Self.map(Self.map(object["spec"])["selector"])), "\(name) selects no pod")
            case "PodDisruptionBudget":
                #expect(selects(Self.map(Self.map(Self.map(object["spec"])["selector"])["matchLabels"])), "\(name) selects no pod")
            default: break
            }
        }
    }

    @Test("only the public endpoints are reachable: ingress denied by default, the ingest, the orchestrator (in-app syncs) and the notifier opened")
    func networkPolicies() throws {
        let policies = try Self.allObjects().filter { $0["kind"] as? String == "NetworkPolicy" }
        let deny = try #require(policies.first { Self.map(Self.map($0["spec"])["podSelector"]).isEmpty })
        #expect(Self.map(deny["spec"])["ingress"] == nil && Self.map(deny["spec"])["policyTypes"] as? [String] == ["Ingress"])
        let open = policies.filter { policy in
            (Self.map(policy["spec"])["ingress"] as? [[String: Any]] ?? []).contains { $0["from"] == nil }
        }
        let openTo = Set(open.flatMap { policy -> [String] in
            let selector = Self.map(Self.map(policy["spec"])["podSelector"])
            let expressions = selector["matchExpressions"] as? [[String: Any]] ?? []
            return expressions.flatMap { $0["values"] as? [String] ?? [] }
                + [Self.map(selector["matchLabels"])["app.kubernetes.io/name"] as? String].compactMap { $0 }
        })
        #expect(openTo == ["herald-ingest", "herald-orchestrator", "herald-notifier"])
    }

    @Test("no pod mounts a service-account token: nothing of Herald calls the Kubernetes API")
    func noServiceAccountToken() throws {
        for (name, pod) in try Self.podTemplates() {
            #expect(pod["automountServiceAccountToken"] as? Bool == false, "\(name)")
        }
    }

    /// What compose.cluster.yaml does, the manifests do: Kafka over TLS with SCRAM-SHA-512 (the records carry emails,
    /// phones and push tokens), the password from a secret, the CA mounted where the settings say.
    @Test("every pod talks to Kafka over TLS with SCRAM: the settings, the password from a secret, the CA mounted")
    func kafkaOverSASL() throws {
        let text = try String(contentsOfFile: repositoryFile("\(Self.directory)/kustomization.yaml"), encoding: .utf8)
        let kustomization = try #require(try Yams.load(yaml: text) as? [String: Any])
        let generators = kustomization["configMapGenerator"] as? [[String: Any]] ?? []
        let literals = generators.first { $0["name"] as? String == "herald-settings" }?["literals"] as? [String] ?? []
        var settings: [String: String] = [:]
        for literal in literals {
            let parts = literal.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { settings[parts[0]] = parts[1] }
        }
        #expect(settings["KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL" && settings["KAFKA_SASL_MECHANISMS"] == "SCRAM-SHA-512")
        #expect(settings["KAFKA_SASL_USERNAME"] != nil && settings["KAFKA_SASL_PASSWORD"] == nil, "the password is a secret")
        let ca = try #require(settings["KAFKA_SSL_CA_LOCATION"])
        let caDirectory = (ca as NSString).deletingLastPathComponent
        for (name, pod) in try Self.podTemplates() {
            let caVolumes = (pod["volumes"] as? [[String: Any]] ?? []).filter { Self.map($0["secret"])["secretName"] as? String == "herald-kafka-ca" }
            for container in Self.containers(pod) {
                #expect(Self.env(container)["KAFKA_SASL_PASSWORD"] == "secret herald-kafka/password", "\(name)")
                let mounts = container["volumeMounts"] as? [[String: Any]] ?? []
                let mounted = mounts.contains { mount in
                    mount["mountPath"] as? String == caDirectory && caVolumes.contains { $0["name"] as? String == mount["name"] as? String }
                }
                #expect(mounted, "\(name): the CA at \(caDirectory)")
            }
        }
    }

    /// Egress denied by default; open for what each pod needs, and no more: a compromised pod reaches no other address
    /// (the cloud's metadata service included).
    @Test("egress: denied by default; DNS and Kafka for every pod, the peers' http port, the providers for the notifier only")
    func egress() throws {
        let policies = try Self.allObjects().filter { $0["kind"] as? String == "NetworkPolicy" }
        func spec(_ policy: [String: Any]) -> [String: Any] { Self.map(policy["spec"]) }
        func egressRules(_ policy: [String: Any]) -> [[String: Any]] { spec(policy)["egress"] as? [[String: Any]] ?? [] }
        let denied = policies.contains { policy in
            Self.map(spec(policy)["podSelector"]).isEmpty && spec(policy)["policyTypes"] as? [String] == ["Egress"] && spec(policy)["egress"] == nil
        }
        #expect(denied, "a policy denies every pod's egress")
        func ports(_ rule: [String: Any]) -> Set<String> {
            Set((rule["ports"] as? [[String: Any]] ?? []).map { "\($0["port"] ?? "")/\($0["protocol"] as? String ?? "TCP")" })
        }
        let everyPod = policies.filter { Self.map(spec($0)["podSelector"]).isEmpty }.flatMap(egressRules)
        #expect(everyPod.contains { ports($0) == ["53/UDP", "53/TCP"] }, "DNS")
        #expect(everyPod.contains { ports($0) == ["9093/TCP"] }, "Kafka's TLS listener")
        for rule in everyPod { #expect((rule["to"] as? [[String: Any]] ?? []).allSatisfy { $0["ipBlock"] == nil }, "no address range for every pod") }
        // Only the notifier goes outside the cluster, and not to private or link-local ranges.
        for policy in policies where egressRules(policy).contains(where: { ($0["to"] as? [[String: Any]] ?? []).contains { $0["ipBlock"] != nil } }) {
            #expect(Self.map(Self.map(spec(policy)["podSelector"])["matchLabels"])["app.kubernetes.io/name"] as? String == "herald-notifier")
            for rule in egressRules(policy) {
                #expect(ports(rule).isSubset(of: ["443/TCP", "587/TCP", "465/TCP"]), "\(ports(rule))")
                for target in rule["to"] as? [[String: Any]] ?? [] {
                    let except = Self.map(target["ipBlock"])["except"] as? [String] ?? []
                    #expect(except.contains("169.254.0.0/16") || except.contains("fe80::/10"), "link-local (metadata) excluded")
                }
            }
        }
    }

    @Test("the README tells how to create every secret the manifests read")
    func secretsDocumented() throws {
        let readme = try String(contentsOfFile: repositoryFile("README.md"), encoding: .utf8)
        var secrets: Set<String> = []
        for (_, pod) in try Self.podTemplates() {
            for volume in pod["volumes"] as? [[String: Any]] ?? [] {
                if let name = Self.map(volume["secret"])["secretName"] as? String { secrets.insert(name) }
            }
            for container in Self.containers(pod) {
                for source in container["envFrom"] as? [[String: Any]] ?? [] {
                    if let name = Self.map(source["secretRef"])["name"] as? String { secrets.insert(name) }
                }
                for variable in container["env"] as? [[String: Any]] ?? [] {
                    let reference = Self.map(Self.map(variable["valueFrom"])["secretKeyRef"])
                    if let name = reference["name"] as? String { secrets.insert(name) }
                }
            }
        }
        #expect(secrets == ["herald-operator", "herald-apps", "herald-notifier-env", "herald-provider-files", "herald-kafka", "herald-kafka-ca"])
        for secret in secrets {
            let documented = readme.contains("create secret generic \(secret)")
            #expect(documented, "the README does not create \(secret)")
        }
        let configMap = readme.contains("create configmap herald-config")
        #expect(configMap, "the README does not create the configmap herald-config")
    }

    // MARK: Reading the manifests

    static func manifestFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: repositoryFile(directory))
            .filter { $0.hasSuffix(".yaml") && $0 != "kustomization.yaml" }.sorted()
    }

    static func documents(_ file: String) throws -> [[String: Any]] {
        let text = try String(contentsOfFile: repositoryFile("\(directory)/\(file)"), encoding: .utf8)
        return try Yams.load_all(yaml: text).compactMap { $0 as? [String: Any] }
    }

    static func allObjects() throws -> [[String: Any]] {
        try manifestFiles().flatMap { try documents($0) }
    }

    static func object(_ objects: [[String: Any]], kind: String, name: String) -> [String: Any]? {
        objects.first { $0["kind"] as? String == kind && map($0["metadata"])["name"] as? String == name }
    }

    /// Every workload's pod template spec, by the workload's name.
    static func podTemplates() throws -> [(name: String, pod: [String: Any])] {
        try allObjects().filter { ["Deployment", "StatefulSet", "Job"].contains($0["kind"] as? String) }.map { workload in
            (map(workload["metadata"])["name"] as? String ?? "", map(map(map(workload["spec"])["template"])["spec"]))
        }
    }

    static func containers(_ pod: [String: Any]) -> [[String: Any]] {
        pod["containers"] as? [[String: Any]] ?? []
    }

    /// A container's environment: literal values, and `secret <name>/<key>` for a secret's key.
    static func env(_ container: [String: Any]) -> [String: String] {
        var result: [String: String] = [:]
        for variable in container["env"] as? [[String: Any]] ?? [] {
            guard let name = variable["name"] as? String else { continue }
            if let value = variable["value"] as? String { result[name] = value }
            let reference = map(map(variable["valueFrom"])["secretKeyRef"])
            if let secret = reference["name"] as? String { result[name] = "secret \(secret)/\(reference["key"] as? String ?? "")" }
        }
        return result
    }

    static func map(_ value: Any?) -> [String: Any] { value as? [String: Any] ?? [:] }

    /// A memory quantity in MiB (`256Mi`, `1Gi`).
    static func mebibytes(_ quantity: String) throws -> Int {
        if quantity.hasSuffix("Mi"), let value = Int(quantity.dropLast(2)) { return value }
        if quantity.hasSuffix("Gi"), let value = Int(quantity.dropLast(2)) { return value * 1024 }
        Issue.record("unexpected memory quantity \(quantity)")
        return 0
    }
}
