"""Gets an access token from mirobody-server's own authorization server, as a client would:
registers, signs the person in, consents, and redeems the code with PKCE. Standard library only.

Usage: oauth_token.py <base URL> <email> <password>   (prints the access token)
"""

import base64
import hashlib
import http.cookiejar
import json
import re
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request

base, email, password = sys.argv[1:4]
redirect = "http://127.0.0.1:1/callback"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


jar = http.cookiejar.CookieJar()
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect())


def send(url, data=None, headers=None):
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with opener.open(request) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read().decode()


def form(fields):
    return urllib.parse.urlencode(fields).encode()


def csrf(page):
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


status, _, body = send(f"{base}/register", json.dumps({"redirect_uris": [redirect], "client_name": "bench", "token_endpoint_auth_method": "none"}).encode(), {"content-type": "application/json"})
assert status == 201, body
client_id = json.loads(body)["client_id"]
verifier = secrets.token_urlsafe(48)
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
query = urllib.parse.urlencode({"response_type": "code", "client_id": client_id, "redirect_uri": redirect, "code_challenge": challenge, "code_challenge_method": "S256", "state": "s"})
_, _, page = send(f"{base}/signin")
status, _, body = send(f"{base}/signin", form({"email": email, "password": password, "csrf": csrf(page), "next": "/account"}))
assert status == 303, (status, body)
status, _, page = send(f"{base}/authorize?{query}")
assert status == 200, (status, page)
status, headers, _ = send(f"{base}/authorize", form({"request": query, "csrf": csrf(page), "decision": "allow"}))
code = urllib.parse.parse_qs(urllib.parse.urlparse(headers["location"]).query)["code"][0]
status, _, body = send(f"{base}/token", form({"grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": redirect, "client_id": client_id}))
assert status == 200, body
print(json.loads(body)["access_token"])
