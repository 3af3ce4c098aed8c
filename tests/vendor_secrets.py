"""Secrets in the formats their vendors document, one per kind, each in a line a tool or a
config file would hold it in. The kinds were taken from public rule sets (gitleaks'
config/gitleaks.toml and detect-secrets' plugins), not from what our scrubber knows;
the values are random in each kind's alphabet and length (seeded, so the corpus is the
same on every run). secret_corpus.SECRETS holds these with the project's first kinds."""

import base64
import json
import random
import string
from urllib.parse import quote

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def fake(kind: str, n: int, alphabet: str = ALNUM) -> str:
    """n random characters of the alphabet, the same for the same kind on every run."""
    rng = random.Random(f"{kind}:{n}:{alphabet}")
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        # a real key holds each kind of character its alphabet has
        kinds = [k for k in (str.isdigit, str.isupper, str.islower) if any(map(k, alphabet))]
        if n < 12 or all(any(map(k, out)) for k in kinds):
            return out


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def uuid(kind: str) -> str:
    h = fake(kind, 32, HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _kinds() -> dict[str, tuple[str, str]]:
    k: dict[str, tuple[str, str]] = {}

    def add(kind: str, secret: str, line: str) -> None:
        assert secret in line, kind
        k[kind] = (secret, line)

    # Cloud providers
    s = fake("gcp_key_id", 40, HEX)
    add("gcp_private_key_id", s, json.dumps({"type": "service_account", "project_id": "shop-prod",
                                             "private_key_id": s}))
    s = fake("servicebus", 43, B64) + "="
    add("azure_servicebus", s, "Endpoint=sb://orders-prod.servicebus.windows.net/;"
        f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={s}")
    s = quote(fake("sas", 43, B64) + "=", safe="")
    add("azure_sas", s, "GET https://shopprod.blob.core.windows.net/exports/orders.csv?sv=2022-11-02"
        f"&ss=b&srt=o&sp=r&se=2026-01-01T00:00:00Z&spr=https&sig={s} 403")
    s = fake("aad", 3) + "8Q~" + fake("aad2", 34, ALNUM + "_~.-")
    add("azure_client_secret", s, f'credential = ClientSecretCredential(tenant, client_id, "{s}")')
    s = fake("apim", 32, HEX)
    add("azure_apim", s, f"curl -H 'Ocp-Apim-Subscription-Key: {s}' https://api.example.net/v1")
    s = "LTAI" + fake("alibaba", 20)
    add("alibaba", s, f"aliyun: InvalidAccessKeyId.NotFound: access key is not found: {s}")
    s = "ABSK" + fake("bedrock", 132, B64)
    add("aws_bedrock", s, f"bedrock runtime rejected the api key {s}")
    s = "IQoJb3JpZ2luX2Vj" + fake("session", 180, B64)
    add("aws_session_token", s, f"aws_session_token = {s}")
    s = fake("cf_global", 37, HEX)
    add("cloudflare_global", s, f'curl -H "X-Auth-Email: ops" -H "X-Auth-Key: {s}" '
        "https://api.cloudflare.com/client/v4/zones")
    s = fake("cf_token", 40, URLSAFE)
    add("cloudflare_token", s, f"CLOUDFLARE_API_TOKEN={s} wrangler deploy")
    s = "v1.0-" + fake("cf_ca", 24, HEX) + "-" + fake("cf_ca2", 146, HEX)
    add("cloudflare_origin_ca", s, f"origin ca key {s} rejected")
    s = "fo1_" + fake("flyio", 43, URLSAFE)
    add("flyio", s, f"fly: authentication failed for {s}")
    s = fake("tfc", 14).lower() + ".atlasv1." + fake("tfc2", 67, URLSAFE)
    add("terraform_cloud", s, f'credentials "app.terraform.io" {{ token = "{s}" }}')
    s = "pul-" + fake("pulumi", 40, HEX)
    add("pulumi", s, f"error: PULUMI_ACCESS_TOKEN is invalid: {s}")
    s = "sha256~" + fake("openshift", 43, URLSAFE)
    add("openshift", s, f"oc login --token={s} --server=https://api.example.net:6443")
    s = "dt0c01." + fake("dt", 24, UPPER) + "." + fake("dt2", 64, UPPER)
    add("dynatrace", s, f"Api-Token {s} has expired")

    # Code hosting and CI
    for prefix in ("gho", "ghs", "ghr", "ghu"):
        s = f"{prefix}_" + fake(prefix, 36)
        add(f"github_{prefix}", s, f"fatal: Authentication failed for token {s}")
    s = "glcbt-" + fake("glcbt", 2) + "_" + fake("glcbt2", 20, URLSAFE)
    add("gitlab_job", s, f"CI_JOB_TOKEN leaked: {s}")
    s = "glrt-" + fake("glrt", 20, URLSAFE)
    add("gitlab_runner", s, f"gitlab-runner register --token {s}")
    s = "glimt-" + fake("glimt", 25, URLSAFE)
    add("gitlab_incoming_mail", s, f"incoming_email_token: {s}")
    s = "glagent-" + fake("glagent", 50, URLSAFE)
    add("gitlab_agent", s, f"agentk: {s} unauthorized")
    s = "gloas-" + fake("gloas", 64, URLSAFE)
    add("gitlab_oauth_secret", s, f"oauth application secret {s}")
    s = "GR1348941" + fake("glrrt", 20, URLSAFE)
    add("gitlab_runner_registration", s, f"gitlab-runner register -r {s}")
    s = fake("glsession", 32, HEX)
    add("gitlab_session", s, f"Cookie: _gitlab_session={s}")
    s = "ATBB" + fake("atbb", 32)
    add("bitbucket", s, f"remote: Invalid credentials for app password {s}")
    s = "ATATT3xFfGF0" + fake("atatt", 180, URLSAFE + "=")
    add("atlassian", s, f"jira: 401 with {s}")
    s = "bkua_" + fake("buildkite", 40, HEX)
    add("buildkite", s, f"buildkite-agent: token {s} rejected")
    s = "sqp_" + fake("sonar", 40, HEX)
    add("sonarqube", s, f"sonar-scanner -Dsonar.login={s}")
    s = "cmVmd" + fake("jfrog", 59)
    add("jfrog_reference", s, f"jf rt ping --access-token {s}")
    s = "AKCp" + fake("artifactory", 69)
    add("artifactory", s, f"artifactory: bad api key {s}")

    # Package registries and containers
    s = "dckr_pat_" + fake("dckr", 27, URLSAFE)
    add("dockerhub", s, f"Error response from daemon: unauthorized: {s}")
    s = b64("deploy:" + fake("dockerauth", 16))
    add("docker_config_auth", s,
        json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": s}}}))
    s = b64("ci-bot:" + fake("npmauth", 14))
    add("npmrc_auth", s, f"_auth={s}")
    s = "rubygems_" + fake("rubygems", 48, HEX)
    add("rubygems", s, f"gem push: {s} is not authorized")
    s = "oy2" + fake("nuget", 43, string.ascii_lowercase + string.digits)
    add("nuget", s, f"dotnet nuget push pkg.nupkg -k {s} -s https://api.nuget.org/v3/index.json")
    s = "CLOJARS_" + fake("clojars", 60, HEX)
    add("clojars", s, f"lein deploy clojars: {s} denied")
    s = "HRKU-AA" + fake("heroku", 58, URLSAFE)
    add("heroku", s, f"heroku: Invalid credentials provided ({s})")

    # Model and data providers
    s = "api_org_" + fake("hforg", 34, string.ascii_letters)
    add("huggingface_org", s, f"HTTPError: 401 for {s}")
    s = "pplx-" + fake("pplx", 48)
    add("perplexity", s, f"perplexity 401: {s}")
    s = "pnu_" + fake("prefect", 36)
    add("prefect", s, f"prefect cloud login -k {s}")

    # Chat and collaboration
    s = "xoxe-1-" + fake("xoxe", 146, UPPER)
    add("slack_refresh", s, f"tooling.tokens.rotate failed for {s}")
    s = "xoxe.xoxp-1-" + fake("xoxecfg", 163, UPPER)
    add("slack_config", s, f"slack config token {s}")
    s = "xoxp-1234567890-1234567890-1234567890-" + fake("xoxp", 32, HEX)
    add("slack_user", s, f"slack: invalid_auth {s}")
    s = ("MT" + fake("discord", 24) + "." + fake("discord2", 6, URLSAFE) + "."
         + fake("discord3", 38, URLSAFE))
    add("discord_bot", s, f"client.run('{s}')")
    s = (f"{uuid('teams1')}@{uuid('teams2')}/IncomingWebhook/{fake('teams3', 32, HEX)}/"
         f"{uuid('teams4')}")
    add("teams_webhook", s, f"POST https://acme.webhook.office.com/webhookb2/{s} 400")
    s = "ntn_" + fake("ntn", 11, string.digits) + fake("ntn2", 35)
    add("notion_ntn", s, f"notion: API token is invalid: {s}")

    # Payments
    s = "whsec_" + fake("whsec", 32)
    add("stripe_webhook", s, f"stripe.error.SignatureVerificationError with secret {s}")
    s = "EAAA" + fake("square", 60, URLSAFE)
    add("square_access", s, f"square: UNAUTHORIZED for {s}")
    s = "sq0csp-" + fake("sq0csp", 43, URLSAFE)
    add("square_secret", s, f"square oauth secret {s} rejected")
    s = "sq0atp-" + fake("sq0atp", 22, URLSAFE)
    add("square_legacy", s, f"square: {s} expired")
    s = f"access_token$production${fake('bt', 16, HEX)}${fake('bt2', 32, HEX)}"
    add("braintree", s, f"braintree.exceptions.AuthenticationError: {s}")
    s = "FLWSECK_TEST-" + fake("flw", 32, HEX) + "-X"
    add("flutterwave", s, f"flutterwave: {s} invalid")
    s = "AC" + fake("twilio_sid", 32, HEX) + ":" + fake("twilio_tok", 32, HEX)
    add("twilio_account", s, f"twilio: 20003 Authenticate for {s}")

    # Mail and marketing
    s = fake("mailchimp", 32, HEX) + "-us21"
    add("mailchimp", s, f"mailchimp: API Key Invalid {s}")
    s = "xkeysib-" + fake("brevo", 64, HEX) + "-" + fake("brevo2", 16)
    add("brevo", s, f"brevo: unauthorized {s}")

    # Monitoring
    s = "NRAK-" + fake("nrak", 27, UPPER)
    add("newrelic_user", s, f"newrelic: NerdGraph 401 for {s}")
    s = "NRII-" + fake("nrii", 32, URLSAFE)
    add("newrelic_insert", s, f"newrelic insert key {s} rejected")
    s = fake("ddapp", 40, HEX)
    add("datadog_app", s, f"curl -H 'DD-APPLICATION-KEY: {s}' https://api.datadoghq.com/api/v1/monitor")
    s = fake("sentry_dsn", 32, HEX)
    add("sentry_dsn", s, f"sentry_sdk.init('https://{s}@o450123.ingest.sentry.io/5501234')")
    s = "glsa_" + fake("glsa", 32) + "_" + fake("glsa2", 8, HEX)
    add("grafana_service_account", s, f"grafana: 401 for {s}")
    s = "glc_" + fake("glc", 48, B64) + "=="
    add("grafana_cloud", s, f"grafana cloud: {s} revoked")
    s = b64(json.dumps({"k": fake("grafana_k", 32), "n": "deploy", "id": 1}, separators=(",", ":")))
    add("grafana_api_key", s, f"grafana api key {s}")
    s = "00" + fake("okta", 40, URLSAFE)
    add("okta", s, f"okta: E0000011 Invalid token provided {s}")
    s = "sdk-" + uuid("launchdarkly")
    add("launchdarkly", s, f"ldclient: SDK key {s} rejected")

    # Secret managers, keys and wallets
    s = "ops_eyJ" + fake("onepassword", 260, B64)
    add("onepassword_service", s, f"op: {s} invalid")
    s = "A3-" + "-".join(fake(f"op{i}", n, UPPER) for i, n in enumerate((6, 6, 5, 5, 5, 5)))
    add("onepassword_secret_key", s, f"op account add --secret-key {s}")
    body = fake("ppk", 64, B64)
    add("putty_ppk", body, "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"
        f"Comment: deploy\nPublic-Lines: 1\n{fake('ppkpub', 64, B64)}\nPrivate-Lines: 1\n{body}\n"
        f"Private-MAC: {fake('ppkmac', 64, HEX)}")
    pem = ("-----BEGIN RSA PRIVATE KEY-----\n" + fake("kubepem", 64, B64) + "\n"
           "-----END RSA PRIVATE KEY-----\n")
    s = b64(pem)
    add("kubeconfig_client_key", s, f"    client-key-data: {s}")
    s = "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9." + fake("kubetok", 120, URLSAFE) + "." + fake(
        "kubetok2", 86, URLSAFE)
    add("kubeconfig_token", s, f"    token: {s}")
    s = fake("openssh", 70, B64)
    add("openssh_key", s,
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----")
    s = fake("pgp", 64, B64)
    add("pgp_key", s,
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{s}\n-----END PGP PRIVATE KEY BLOCK-----")
    s = "0x" + fake("eth", 64, HEX)
    add("ethereum", s, f'acct = Account.from_key("{s}")')
    s = "5" + fake("wif", 50, BASE58)
    add("bitcoin_wif", s, f"importprivkey {s} failed")

    # Configuration and command lines
    s = "Xk9" + fake("dbprod", 13)
    add("env_suffix", s, f"DB_PASSWORD_PROD={s} ./migrate.sh")
    s = fake("skb", 64, HEX)
    add("secret_key_base", s, f"SECRET_KEY_BASE={s} bin/rails server")
    s = fake("enckey", 32, B64)
    add("yaml_encryption_key", s, f"  encryption_key: {s}")
    s = "k3y-" + fake("signkey", 20)
    add("signing_key", s, f'signing_key = "{s}"')
    s = fake("secretKey", 40, B64)
    add("json_secret_key", s, json.dumps({"accessKeyId": "AKIAIOSFODNN7EXAMPLE", "secretKey": s}))
    s = "Pw" + fake("jsonpass", 10) + "#1"
    add("json_pass", s, json.dumps({"user": "svc", "pass": s}))
    s = "Nr4-" + fake("netrc", 12)
    add("netrc", s, f"machine api.example.com login dana password {s}")
    s = "Dk7-" + fake("dockerlogin", 12)
    add("docker_login", s, f"docker login -u deploy -p {s} registry.example.com")
    s = b64("user:pass")
    add("basic_short", s, f"Authorization: Basic {s}")
    s = "Cu9-" + fake("curlu", 10)
    add("curl_user_flags", s, f"curl -fsSL -X POST -u admin:{s} https://ci.example.com/job/build")
    s = fake("sessionid", 32, HEX)
    add("url_sessionid", s, f"GET /dashboard?tab=1&sessionid={s} HTTP/1.1 302")
    s = "Xk9/Qz+Lm2pq" + fake("mongo", 6)
    add("mongodb_srv", s, f"pymongo: mongodb+srv://admin:{s}@cluster0.example.net/app timed out")
    s = "Od7-" + fake("odbc", 12)
    add("odbc", s, f"Server=tcp:db.example.net,1433;Database=app;User ID=sa;Password={s};")
    s = "Jd3-" + fake("jdbc", 12)
    add("jdbc", s, f"jdbc:postgresql://db:5432/app?user=app&password={s}&ssl=true")
    s = "Pa5-" + fake("psql", 12)
    add("pgpassword", s, f"PGPASSWORD={s} psql -h db -U app")
    s = fake("hmac", 48, B64)
    add("hmac_key", s, f"webhook hmac_key: {s}")
    s = "Ap6-" + fake("appkey", 20)
    add("app_key", s, f"APP_KEY=base64:{s}")
    s = fake("xapikey", 32)
    add("api_key_header", s, f"> x-api-key: {s}")
    s = "Lk2-" + fake("license", 20, UPPER)
    add("license_key", s, f'license_key: "{s}"')
    s = fake("masterkey", 32, HEX)
    add("master_key", s, f"RAILS_MASTER_KEY={s}")
    s = "Ck1-" + fake("clientsecret", 24)
    add("client_secret_json", s, json.dumps({"client_id": "web", "client_secret": s}))
    s = fake("refresh", 40, URLSAFE)
    add("refresh_token_url", s, f"POST /oauth/token?grant_type=refresh_token&refresh_token={s}")
    s = "Ht4-" + fake("htpw", 12)
    add("password_flag", s, f"mysql --user=app --password={s} -h db")
    return k


VENDOR_SECRETS = _kinds()
