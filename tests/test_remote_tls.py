"""`https://` to a libSQL server, end to end on loopback: a TLS-terminating
proxy with a self-signed certificate authority in front of a real sqld. A CA
bundle passed in `SSL_CERT_FILE` is trusted; without it the certificate is not,
and that is a clear error, refused at once rather than retried."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from contextforge import ContextForge, RetryableStorageError, StorageError
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .hrana_proxy import CountingProxy, counting_proxy
from .sqld import Sqld, sqld_fixture  # noqa: F401  (provides the `sqld` fixture)


def certificate_authority(directory: Path, name: str = "test CA") -> tuple[Path, Path, Path]:
    """A CA, and a server certificate it signed for 127.0.0.1: (CA PEM, server
    certificate chain PEM, server key PEM)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"contextforge {name}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_file, chain_file, key_file = (
        directory / "ca.pem",
        directory / "chain.pem",
        directory / "key.pem",
    )
    ca_file.write_bytes(ca.public_bytes(pem))
    chain_file.write_bytes(server.public_bytes(pem) + ca.public_bytes(pem))
    key_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return ca_file, chain_file, key_file


@pytest.fixture(name="tls_proxy")
def tls_proxy_fixture(sqld: Sqld, tmp_path: Path) -> Iterator[tuple[CountingProxy, Path]]:
    ca_file, chain_file, key_file = certificate_authority(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(chain_file, key_file)
    with counting_proxy(sqld.port, tls=context) as proxy:
        yield proxy, ca_file


async def test_https_with_the_ca_bundle_works_end_to_end(
    tls_proxy: tuple[CountingProxy, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy, ca_file = tls_proxy
    assert proxy.url.startswith("https://")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    async with await ContextForge.open(proxy.url) as cf:
        saved = await cf.save("the deploy failed: missing env var", scope="demo")
        assert [h.id for h in await cf.query("deploy", "demo", 1000)] == [saved]
        many = await cf.save_many([{"content": f"note {i}", "scope": "demo"} for i in range(50)])
        assert len(set(many)) == 50
    assert proxy.count > 0


async def test_an_untrusted_certificate_is_a_clear_error_at_once(
    tls_proxy: tuple[CountingProxy, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    proxy, _ = tls_proxy
    # A bundle holding some other CA: the proxy's certificate is not trusted.
    (tmp_path / "other").mkdir()
    other_ca, _, _ = certificate_authority(tmp_path / "other", "another CA")
    monkeypatch.setenv("SSL_CERT_FILE", str(other_ca))
    before = proxy.count
    with pytest.raises(StorageError) as caught:
        await ContextForge.open(proxy.url)
    # The handshake failed: no request reached the proxy's HTTP layer.
    assert proxy.count == before
    assert not isinstance(caught.value, RetryableStorageError)
    message = str(caught.value)
    assert "certificate" in message.lower()
    assert "SSL_CERT_FILE" in message
