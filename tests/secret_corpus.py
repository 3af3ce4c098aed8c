"""Planted secrets, one per kind, each in the line a tool would print it in; and code
and versions that look like secrets but must survive. Shared by the scrubber's tests
and the end-to-end leak tests (every field, every output)."""

import base64
import json

from vendor_secrets import VENDOR_SECRETS

PEM_BODY = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
            "MzEfYyjiWA4R4ugjbWj8N2H1Dr3rrk0oVbQpQ1wBUQdnV8sBoeYqmx3dm9S9qDEZ")
AZURE_KEY = "np/wUtJWQNVTQ6jwZAPUSsLRQYfQjmGu+lNv4DKiDyzJpBx9N6q9Y47XUIzE+RTZNrdjLXL9t1OwH20gsg5oNF=="
GCP_KEY = json.dumps({"type": "service_account", "private_key_id": "4c1d5e",
                      "private_key": f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n"
                                     "-----END PRIVATE KEY-----\n"})
B64_OPENAI = base64.b64encode(b"sk-proj-GVzHfXRRc3sP9xSswfPh0chZjeMjiY9GIklJ053w").decode()

# kind: (the secret, a line holding it)
SECRETS: dict[str, tuple[str, str]] = {
    "openai": ("sk-proj-Zq8vT3xLp9WmN2bR7cYk4HsJ6dFa1GeU",
               "openai.AuthenticationError: Incorrect API key sk-proj-Zq8vT3xLp9WmN2bR7cYk4HsJ6dFa1GeU"),
    "anthropic": ("sk-ant-api03-Hk29sLqPzX8vNm3RtW7yBc4JdF6gA1eU",
                  "anthropic 401 for key sk-ant-api03-Hk29sLqPzX8vNm3RtW7yBc4JdF6gA1eU"),
    "github": ("ghp_16C7e42F292c6912E7710c838347Ae178B4a",
               "remote: Invalid username or token ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    "github_pat": ("github_pat_11ABCDEFG0aBcDeFgHiJkLmN_0123456789abcdefghijKLMNOPQRSTUV",
                   "token github_pat_11ABCDEFG0aBcDeFgHiJkLmN_0123456789abcdefghijKLMNOPQRSTUV"),
    "aws_access": ("AKIAZ7Q4PLMX3RT8WV2N", "The AWS Access Key Id AKIAZ7Q4PLMX3RT8WV2N does not exist"),
    "aws_secret_bare": ("uApW+NlysDWGUyqAnEHe4n+xh3Mc/XTZkj6ZbV1s",
                        "credentials AKIAZ7Q4PLMX3RT8WV2N uApW+NlysDWGUyqAnEHe4n+xh3Mc/XTZkj6ZbV1s rejected"),
    "slack": ("xoxb-2048-9437-Qm7TzLpW3xRk", "slack_sdk: invalid_auth for xoxb-2048-9437-Qm7TzLpW3xRk"),
    "slack_app": ("xapp-1-A05IXJD47QH-4321098765-7c53157f412e6e5c354ba6025bbd8540",
                  "socket mode: xapp-1-A05IXJD47QH-4321098765-7c53157f412e6e5c354ba6025bbd8540 revoked"),
    "slack_webhook": ("T0IRAMOH41/B0VZUVY5VM/4NOINxeovyrNKi1IQ8CVrqvA",
                      "POST https://hooks.slack.com/services/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 404"),
    "discord_webhook": ("1234567890123456789/nonL9oSncxQSLKAzu3Nos1xwX6Yq9sbOdrgVAMZ4vHMjLnaMum",
                        "https://discord.com/api/webhooks/1234567890123456789/nonL9oSncxQSLKAzu3Nos1xwX6Yq9sbOdrgVAMZ4vHMjLnaMum"),
    "stripe": ("sk_live_ErQHQwjyaxErPZDS3MoJaQNj", "stripe.error.AuthenticationError: sk_live_ErQHQwjyaxErPZDS3MoJaQNj"),
    "stripe_restricted": ("rk_live_Cxkv5ndK0meGR0vRzZ1fb6d0", "using rk_live_Cxkv5ndK0meGR0vRzZ1fb6d0 for refunds"),
    "gitlab": ("glpat-Cl24o2rOugvkZ189Xdky", "HTTP Basic: Access denied for glpat-Cl24o2rOugvkZ189Xdky"),
    "google_api": ("AIzaHTUXNoGEQUVwdW3edC2fXAnCwjJe3J-Sg6V",
                   "maps: API key AIzaHTUXNoGEQUVwdW3edC2fXAnCwjJe3J-Sg6V not valid"),
    "google_oauth": ("ya29.ARK689Ev7UxyCaIRwEbfFoUtdPJpD9_TH4u5LfJQ4BKGdadqI1rEz38hHf13",
                     "google.auth: ya29.ARK689Ev7UxyCaIRwEbfFoUtdPJpD9_TH4u5LfJQ4BKGdadqI1rEz38hHf13 expired"),
    "huggingface": ("hf_Lf5zYmLJwxOVyKkbSTj5bZc5e6AImY7yYg",
                    "huggingface_hub: 401 for hf_Lf5zYmLJwxOVyKkbSTj5bZc5e6AImY7yYg"),
    "npm": ("npm_Twmtr7YSRIFNNhnIMSRzLpeAwufRvjRfUttS", "npm ERR! 403 npm_Twmtr7YSRIFNNhnIMSRzLpeAwufRvjRfUttS"),
    "pypi": ("pypi-AgEIcHlwaS5vcmcx3UwdA_4_whR6EPmCaUUJz3LCsQu7XF66gD0Y4gnNScP-UNvr9CrG-f2UK0K",
             "twine: 403 for pypi-AgEIcHlwaS5vcmcx3UwdA_4_whR6EPmCaUUJz3LCsQu7XF66gD0Y4gnNScP-UNvr9CrG-f2UK0K"),
    "twilio": ("SKca4481cdd8adcfcc5568381b94960910", "twilio: 20003 for SKca4481cdd8adcfcc5568381b94960910"),
    "sendgrid": ("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",
                 "sendgrid 401 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"),
    "azure_storage": (AZURE_KEY, "DefaultEndpointsProtocol=https;AccountName=prod;"
                      f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net"),
    "gcp_service_account": (PEM_BODY, f"google.auth: bad credentials file {GCP_KEY}"),
    "basic_auth": ("ZGVwbG95OmJ2WWVIUk5ydG90QXJa", "> Authorization: Basic ZGVwbG95OmJ2WWVIUk5ydG90QXJa"),
    "token_auth": ("ghx9f3kQ2xLp9WmN2bR7cYk", "curl -H 'Authorization: token ghx9f3kQ2xLp9WmN2bR7cYk' api"),
    "base64_openai": (B64_OPENAI, f"OPENAI_B64={B64_OPENAI} decoded at startup"),
    "mysql_pwd": ("Wq8-plover-77", "env MYSQL_PWD=Wq8-plover-77 mysql -u app"),
    "card": ("4360 2479 7524 0469", "charge failed for card 4360 2479 7524 0469 (declined)"),
    "ssn": ("536-22-8741", "validation error: ssn 536-22-8741 already registered"),
    "curl_user": ("Tr0ub4dor-3", "$ curl -u deploy:Tr0ub4dor-3 https://ci.example.com/api"),
    "sshpass": ("Plover-91x", "$ sshpass -p Plover-91x ssh deploy@build"),
    "mysql_p": ("hunter2Zq", "$ mysql -u root -phunter2Zq app_db"),
    "redis_cli": ("Rd5-s3cret", "$ redis-cli -h cache -a Rd5-s3cret ping"),
    "cookie": ("q8vT3xLp9WmN2bR7cYk4", "> Cookie: sessionid=q8vT3xLp9WmN2bR7cYk4; csrftoken=abc"),
    "stripe_env": ("Zx81-stripe-value", "STRIPE_KEY=Zx81-stripe-value node server.js"),
    "openai_env": ("Kp3-openai-value", "export OPENAI_KEY=Kp3-openai-value"),
    "jwt": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.Qm9vZ1NpZ25hdHVyZVZhbHVlMTIz",
            "session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.Qm9vZ1NpZ25hdHVyZVZhbHVlMTIz; Path=/"),
    "bearer": ("8f3kQ2xLp9WmN2bR7cYk", "> Authorization: Bearer 8f3kQ2xLp9WmN2bR7cYk"),
    "password": ("hunter2-Plover-91", "connect failed: password=hunter2-Plover-91 host=db"),
    "url_password": ("Tr0ub4dor-and-3", "postgresql://bot:Tr0ub4dor-and-3@db.internal:5432/app refused"),
    "email": ("dana.quill@corp-mail.example", "SMTP 550 for dana.quill@corp-mail.example"),
    "ipv4": ("203.0.113.77", "timeout talking to 203.0.113.77:443"),
    "ipv6": ("2001:db8::8a2e:370:7334", "dial tcp [2001:db8::8a2e:370:7334]:443: i/o timeout"),
    "home_user": ("dquill", 'File "/home/dquill/proj/deploy.py", line 12'),
    "rsa_key": (PEM_BODY, f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"),
    "mailgun": ("key-d650bb93fbdba1909a41a763225da81d", "mailgun 401 key-d650bb93fbdba1909a41a763225da81d"),
    "shopify": ("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", "shopify: 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"),
    "digitalocean": ("dop_v1_fe2dc655425a517ff452e74f487882c580d1e46d510034c962e25925c0a04320",
                     "doctl: dop_v1_fe2dc655425a517ff452e74f487882c580d1e46d510034c962e25925c0a04320"),
    "databricks": ("dapi8b89b35e3ddb8b33a87a8ffa032c057e", "databricks: dapi8b89b35e3ddb8b33a87a8ffa032c057e"),
    "groq": ("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",
             "groq 401 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"),
    "replicate": ("r8_ifNvyauDrwetvvbgvBprmdAin7XTN0aV2osgd", "replicate: r8_ifNvyauDrwetvvbgvBprmdAin7XTN0aV2osgd"),
    "postman": ("PMAK-40b2b65d322bf545fad3549e-310f117a095dd2a31f31fd9ffd7fc460ea",
                "newman: PMAK-40b2b65d322bf545fad3549e-310f117a095dd2a31f31fd9ffd7fc460ea"),
    "age": ("AGE-SECRET-KEY-1KO4R7ENJLBK591O01KLW95UL2LB8GPQ0S2V31EAH7H868CJM8DBH1Y2B2Y",
            "sops: AGE-SECRET-KEY-1KO4R7ENJLBK591O01KLW95UL2LB8GPQ0S2V31EAH7H868CJM8DBH1Y2B2Y"),
    "vault": ("hvs.fwShzZnIJWyYAOFnuA_6yuohls3WVpX-3hCsI95pQKaAE1qleZdJ",
              "vault: permission denied for hvs.fwShzZnIJWyYAOFnuA_6yuohls3WVpX-3hCsI95pQKaAE1qleZdJ"),
    "doppler": ("dp.pt.YmVjX3LAht27hSL19grBEJRjPpu9Am58TBlRRl2IMV5",
                "doppler: dp.pt.YmVjX3LAht27hSL19grBEJRjPpu9Am58TBlRRl2IMV5 invalid"),
    "linear": ("lin_api_pqts53DqFirj3430HmHVomMNuaaK3WMGZOThDDYl",
               "linear: lin_api_pqts53DqFirj3430HmHVomMNuaaK3WMGZOThDDYl"),
    "xai": ("xai-xEVNMPZVhtI0i0GBUTzAFKxuxDTtP5VNwN4HaD8lKPrCbwIGUiAPIY8xZkj9RNVuYfGK",
            "xai 401 xai-xEVNMPZVhtI0i0GBUTzAFKxuxDTtP5VNwN4HaD8lKPrCbwIGUiAPIY8xZkj9RNVuYfGK"),
    "notion": ("secret_9o0J341BR9FqVgn1SyEr5CwNSoHgLM1QuJfkC3hBEIc",
               "notion: secret_9o0J341BR9FqVgn1SyEr5CwNSoHgLM1QuJfkC3hBEIc unauthorized"),
    "telegram": ("7123456789:AAGP_GDHEnjBxPSR2aXqe-Uz5IYrr96xwON",
                 "telegram: 401 for bot 7123456789:AAGP_GDHEnjBxPSR2aXqe-Uz5IYrr96xwON"),
}

# Kinds an attacker's corpus found missed, and where they were printed.
SECRETS.update({
    "azure_client_secret": ("Gq18Q~Xz0.bN3_kPq7LmR2sT9vW4yZ1aC6dE8fHj",
                            "AADSTS7000215: Invalid client secret Gq18Q~Xz0.bN3_kPq7LmR2sT9vW4yZ1aC6dE8fHj"),
    "huggingface_org": ("api_org_kT4nW8qZ2xL6vB9mR3sP7dF1gH5jK0cYeA",
                        "HfHubHTTPError: 401 for token api_org_kT4nW8qZ2xL6vB9mR3sP7dF1gH5jK0cYeA"),
    "datadog_app_key": ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
                        "datadog: 403 Forbidden for application key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"),
    "cloudflare_token": ("4sE_ZJxm7K9qP2vN8bW3tR6yL1cF5hD0gU-aXoIe",
                         "wrangler: CLOUDFLARE_API_TOKEN 4sE_ZJxm7K9qP2vN8bW3tR6yL1cF5hD0gU-aXoIe is not valid"),
    "webhook_signing_hex": ("4f2c1a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39",
                            "webhook signing secret 4f2c1a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39 rejected"),
    "svix_webhook": ("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La+aSw/Q==",
                     "svix: verification failed with whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La+aSw/Q=="),
    "phone_us": ("(415) 555-0132", "sms to (415) 555-0132 failed: carrier rejected"),
    "phone_us_dashes": ("415-555-0132", "call 415-555-0132 for the on-call engineer"),
    "phone_intl": ("+44 20 7946 0958", "twilio: cannot reach +44 20 7946 0958 (unreachable)"),
    "phone_e164": ("+14155550132", "twilio.base.exceptions.TwilioRestException: To +14155550132"),
})

# Kinds a fourth attacker's corpus found missed: an Azure client secret and a Cloudflare
# token as their tools' settings name them, a hex API secret assigned as Ruby, PHP and
# Make do, a token named in prose, a home directory in JSON quoted twice.
HEX_SECRET = "5f4dcc3b5aa765d61d8327deb882cf99a3bf4f1b"
CF_TOKEN = "Yq3vN8bW3tR6yL1cF5hD0gU-aXoIe_ZJxm7K9qP2"
SECRETS.update({
    "azure_client_secret_env": ("Zk71Q~4mN9pL2xR8vT5wY3bC6dF0gH1jK7sQ9eUo",
                                "export AZURE_CLIENT_SECRET=Zk71Q~4mN9pL2xR8vT5wY3bC6dF0gH1jK7sQ9eUo"),
    "cloudflare_api_token_env": (CF_TOKEN, f"CLOUDFLARE_API_TOKEN={CF_TOKEN} npx wrangler deploy"),
    "cloudflare_token_prose": (CF_TOKEN, f"wrangler: Invalid token {CF_TOKEN} [code: 1000]"),
    "api_secret_hex": (HEX_SECRET[:32], f'api_secret = "{HEX_SECRET[:32]}"'),
    "api_secret_rocket": (HEX_SECRET, f"config = {{ 'api_secret' => '{HEX_SECRET}' }}"),
    "api_secret_make": (HEX_SECRET, f"API_SECRET := {HEX_SECRET}"),
    "secret_prose_hex": (HEX_SECRET, f"signature mismatch: secret {HEX_SECRET} rejected"),
    "windows_home_json_twice": ("danaquill", json.dumps(json.dumps(
        {"file_path": "C:\\Users\\danaquill\\proj\\a.py"}))),
    "json_key_in_command": (HEX_SECRET, "bash -lc 'curl -d '\"'\"'{\"client_secret\": "
                            f"\"{HEX_SECRET}\"}}'\"'\"' https://api.example.com'"),
})

# Code, versions and ids that look like secrets and must come through unchanged.
LOOK_ALIKES = [
    "python 3.11.7.1", "Python 3.12.0.1 on linux", "token=None", "password=None",
    "api_key=os.environ['OPENAI_API_KEY']", "secret = os.getenv('APP_SECRET')",
    "password=${DB_PASSWORD}", "export DB_PASSWORD=$DB_PASSWORD_FROM_VAULT",
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 (HEAD -> main)",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "2024-05-01T12:34:56.789Z worker exited", "sort_key=created_at primary_key=id",
    "task-list is risk-free; install scikit-learn and sk-learn",
    "401: Bearer authentication required", "Authorization required",
    "KeyError: 'password'", "max_tokens=4096 tokenizer=bert-base-uncased",
    "src/components/UserProfileSettingsPanel1/index.tsx",
    "order 1234567890123456 not found", "timestamp 1714567890123",
    "ticket 555-1234 reopened", "tests/test_api.py::TestClient::test_login PASSED",
    # numbers with a plus that are no telephone: a diff's hunk, counts, exponents, zones
    "@@ -1234,7 +1234,8 @@ def main():", "+100 passed, 3 failed", "1e+10 2e+10 3e+10",
    "Date: Thu, 01 Jan 2026 00:00:00 +1000 (AEST)", "offset +05:30 applied",
    "the api key is missing: set OPENAI_API_KEY", "access token expired at 2026-01-01",
    "mysql -u root -p app_db", "curl -u deploy https://ci.example.com",
]

SECRETS.update(VENDOR_SECRETS)
