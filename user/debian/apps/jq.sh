# jq: building, filtering, reshaping and formatting JSON.
set -e
jq -n '[range(1; 11) | {n: ., sq: (. * .), even: (. % 2 == 0)}]' > nums.json
jq -c '[.[] | select(.even) | .sq]' nums.json
jq -r '.[] | "\(.n)\t\(.sq)"' nums.json | tail -2
jq '{total: (map(.sq) | add), max: (map(.n) | max), keys: (.[0] | keys)}' nums.json
echo '{"a":{"b":[1,{"c":"deep"}]},"s":"x\u00e9y"}' | jq -c '.a.b[1].c, (.s | length), paths(type == "number")'
jq -n --arg who kiln '$who | ascii_upcase | split("") | reverse | join("-")'
printf '{"k":1}\n{"k":2}\n{"k":3}\n' | jq -s 'map(.k) | add'
jq -n '"2024-01-02T03:04:05Z" | fromdate | todate'
jq -n '[limit(5; repeat(1))] | length, (1e3 | tostring), ([3,1,2] | sort_by(-.))'
