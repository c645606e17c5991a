# openssl: digests, HMAC, ciphers with a fixed key and iv, base64, and
# the fields of a test certificate made on the host (test-cert.pem).
set -e
seq 1 200000 | sed 's/$/ kiln debian round trip/' > data.txt
printf 'The quick brown fox jumps over the lazy dog' > fox.txt
openssl dgst -sha256 fox.txt
openssl dgst -sha512 -r fox.txt
openssl dgst -md5 -r fox.txt
openssl dgst -sha3-256 -r fox.txt
openssl dgst -sha256 -hmac secret -r fox.txt
openssl dgst -sha256 -r data.txt
K=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
IV=f0e0d0c0b0a090807060504030201000
openssl enc -aes-256-cbc -K $K -iv $IV -in fox.txt -out fox.enc
openssl base64 -in fox.enc
openssl enc -d -aes-256-cbc -K $K -iv $IV -in fox.enc; echo
openssl enc -chacha20 -K $K -iv $IV -in data.txt | sha256sum
openssl enc -aes-128-ctr -K 00112233445566778899aabbccddeeff -iv $IV -in data.txt | openssl dgst -sha256 -r
printf 'hello base64 world' | openssl base64 -A; echo
echo 'aGVsbG8gYmFzZTY0IHdvcmxk' | openssl base64 -d; echo
openssl x509 -in "$APPS/test-cert.pem" -noout -subject -issuer -serial -dates -fingerprint -sha256
openssl x509 -in "$APPS/test-cert.pem" -noout -text | grep -E 'Public-Key|Signature Algorithm|CA:|DNS:' | sort -u | sed 's/^ *//'
openssl verify -CAfile "$APPS/test-cert.pem" "$APPS/test-cert.pem" | sed 's|.*/||'
openssl x509 -in "$APPS/test-cert.pem" -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -r
openssl x509 -in "$APPS/test-cert.pem" -outform DER | openssl dgst -sha1 -r
openssl asn1parse -in "$APPS/test-cert.pem" | wc -l
