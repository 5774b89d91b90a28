/*
 * The shapes of tests/unit/llm_choice.c: where each is sent, the
 * "tool_choice", and what the code before decided of it (the detail of
 * its refusal, or "": allowed), but for the custom tool of no name in an
 * allowed_tools list, which 35c020c refuses.
 */

    { CT_RESPONSES, "\"auto\"", "" },
    { CT_RESPONSES, "\"none\"", "" },
    { CT_RESPONSES, "\"required\"", "" },
    { CT_RESPONSES, "\"any\"", "" },
    { CT_RESPONSES, "\"tool\"", "" },
    { CT_RESPONSES, "\"function\"", "" },
    { CT_RESPONSES, "null", "" },
    { CT_RESPONSES, "\"\\u0061uto\"", "" },
    { CT_RESPONSES, "\"web_search_preview\"", "" },
    { CT_RESPONSES, "\"file_search\"",
      "tool type \"file_search\" in \"tool_choice\" is run by the "
      "provider; the policy does not allow it (provider_tools: file_search)" },
    { CT_RESPONSES, "\"f\\u0069le_search\"",
      "tool type \"file_search\" in \"tool_choice\" is run by the "
      "provider; the policy does not allow it (provider_tools: file_search)" },
    { CT_RESPONSES, "\"allowed_tools\"",
      "tool type \"allowed_tools\" in \"tool_choice\" is unknown to the "
      "gateway and may be run by the provider; it is refused" },
    { CT_RESPONSES, "\"\\u0061llowed_tools\"",
      "tool type \"allowed_tools\" in \"tool_choice\" is unknown to the "
      "gateway and may be run by the provider; it is refused" },
    { CT_RESPONSES, "\"sometimes\"",
      "tool type \"sometimes\" in \"tool_choice\" is unknown to the "
      "gateway and may be run by the provider; it is refused" },
    { CT_RESPONSES, "\"\"",
      "tool type \"\" in \"tool_choice\" is unknown to the gateway and may "
      "be run by the provider; it is refused" },
    { CT_RESPONSES, "\"caf\\u00e9\"",
      "tool type \"caf??\" in \"tool_choice\" is unknown to the gateway "
      "and may be run by the provider; it is refused" },
    { CT_RESPONSES, "\"caf\xc3" "\xa9" "\"",
      "tool type \"caf??\" in \"tool_choice\" is unknown to the gateway "
      "and may be run by the provider; it is refused" },
    { CT_RESPONSES, "\"web_search_\\u0078abcdefghijklmnopqrstuvwxyzabcdefghij"
                    "klmnabcdefghijklmnopqrstuvwxyzabcdefghijklmn\"",
      "tool type "
      "\"web_search_xabcdefghijklmnopqrstuvwxyzabcdefghijklmnabcdefghi...\""
      " in \"tool_choice\" is unknown to the gateway and may be run by the "
      "provider; it is refused" },
    { CT_RESPONSES, "\"file_search_abcdefghijklmnopqrstuvwxyzabcdefghijklmnab"
                    "cdefghijklmnopqrstuvwxyzabcdefghijklmn\"",
      "tool type "
      "\"file_search_abcdefghijklmnopqrstuvwxyzabcdefghijklmnabcdefghi...\""
      " in \"tool_choice\" is unknown to the gateway and may be run by the "
      "provider; it is refused" },
    { CT_CHAT, "1",
      "\"tool_choice\" must be a string or an object" },
    { CT_CHAT, "true",
      "\"tool_choice\" must be a string or an object" },
    { CT_CHAT, "[]",
      "\"tool_choice\" must be a string or an object" },
    { CT_CHAT, "[{\"type\":\"function\"}]",
      "\"tool_choice\" must be a string or an object" },
    { CT_RESPONSES, "{}",
      "a tool's \"type\" in \"tool_choice\" must be a string" },
    { CT_RESPONSES, "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}",
      "" },
    { CT_RESPONSES, "{\"type\":\"function\",\"name\":\"f\"}", "" },
    { CT_RESPONSES, "{\"type\":\"custom\",\"name\":\"g\"}", "" },
    { CT_RESPONSES, "{\"type\":\"tool\",\"name\":\"f\"}", "" },
    { CT_RESPONSES, "{\"type\":\"auto\",\"disable_parallel_tool_use\":true}",
      "" },
    { CT_RESPONSES, "{\"type\":\"web_search_preview\"}", "" },
    { CT_RESPONSES, "{\"type\":\"file_search\"}",
      "tool type \"file_search\" in \"tool_choice\" is run by the "
      "provider; the policy does not allow it (provider_tools: file_search)" },
    { CT_RESPONSES, "{\"type\":\"mcp\",\"server_label\":\"x\"}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_RESPONSES, "{\"type\":\"frobnicate\"}",
      "tool type \"frobnicate\" in \"tool_choice\" is unknown to the "
      "gateway and may be run by the provider; it is refused" },
    { CT_RESPONSES, "{\"type\":\"Function\"}",
      "tool type \"Function\" in \"tool_choice\" is unknown to the gateway "
      "and may be run by the provider; it is refused" },
    { CT_RESPONSES, "{\"type\":\"\"}",
      "tool type \"\" in \"tool_choice\" is unknown to the gateway and may "
      "be run by the provider; it is refused" },
    { CT_RESPONSES, "{\"type\":\"m\\u0063p\",\"server_label\":\"x\"}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_RESPONSES, "{\"typ\\u0065\":\"m\\u0063p\"}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_RESPONSES, "{\"\\u0074ype\":\"web_search_preview\"}", "" },
    { CT_RESPONSES, "{\"type\":\"function\",\"function\":{\"name\":\"f\\u00e9"
                    "\"}}", "" },
    { CT_RESPONSES, "{\"type\":\"function\",\"function\":{\"name\":\"f\xc3"
                    "\xa9" "\"}}", "" },
    { CT_RESPONSES, "{\"type\":\"f\\u00e9\"}",
      "tool type \"f??\" in \"tool_choice\" is unknown to the gateway and "
      "may be run by the provider; it is refused" },
    { CT_RESPONSES, "{\"type\":\"f\xc3" "\xa9" "\"}",
      "tool type \"f??\" in \"tool_choice\" is unknown to the gateway and "
      "may be run by the provider; it is refused" },
    { CT_RESPONSES, "{\"type\":\"caf\\u00e9_abcdefghijklmnopqrstuvwxyzabcdefg"
                    "hijklmnabcdefghijklmnopqrstuvwxyzabcdefghijklmn\"}",
      "tool type "
      "\"caf??_abcdefghijklmnopqrstuvwxyzabcdefghijklmnabcdefghijklmno...\""
      " in \"tool_choice\" is unknown to the gateway and may be run by the "
      "provider; it is refused" },
    { CT_RESPONSES, "{\"type\":null}",
      "a tool's \"type\" in \"tool_choice\" must be a string" },
    { CT_RESPONSES, "{\"type\":1}",
      "a tool's \"type\" in \"tool_choice\" must be a string" },
    { CT_RESPONSES, "{\"type\":true}",
      "a tool's \"type\" in \"tool_choice\" must be a string" },
    { CT_RESPONSES, "{\"type\":{\"type\":\"function\"}}",
      "a tool's \"type\" in \"tool_choice\" must be a string" },
    { CT_RESPONSES, "{\"type\":[\"function\"]}",
      "a tool's \"type\" in \"tool_choice\" must be a string" },
    { CT_RESPONSES, "{\"function\":{\"name\":\"f\"}}",
      "a tool's \"type\" in \"tool_choice\" must be a string" },
    { CT_RESPONSES, "{\"function\":{\"type\":\"function\"},\"type\":\"file_se"
                    "arch\"}",
      "tool type \"file_search\" in \"tool_choice\" is run by the "
      "provider; the policy does not allow it (provider_tools: file_search)" },
    { CT_RESPONSES, "{\"type\":\"file_search\",\"note\":\"Type\"}",
      "tool type \"file_search\" in \"tool_choice\" is run by the "
      "provider; the policy does not allow it (provider_tools: file_search)" },
    { CT_RESPONSES, "{\"type\":\"function\",\"Type\":\"web_search_preview\"}",
      "key \"Type\" in \"tool_choice\" differs from \"type\" only by case" },
    { CT_RESPONSES, "{\"Type\":\"function\"}",
      "key \"Type\" in \"tool_choice\" differs from \"type\" only by case" },
    { CT_RESPONSES, "{\"TYPE\":\"function\",\"type\":\"function\"}",
      "key \"TYPE\" in \"tool_choice\" differs from \"type\" only by case" },
    { CT_RESPONSES, "{\"\\u0054ype\":\"function\",\"type\":\"function\"}",
      "key \"Type\" in \"tool_choice\" differs from \"type\" only by case" },
    { CT_RESPONSES, "{\"type\":\"function\",\"TOOLS\":[]}",
      "key \"TOOLS\" in \"tool_choice\" differs from \"tools\" only by case" },
    { CT_RESPONSES, "{\"type\":\"function\",\"Tools\":[{\"type\":\"mcp\"}]}",
      "key \"Tools\" in \"tool_choice\" differs from \"tools\" only by case" },
    { CT_RESPONSES, "{\"type\":\"function\",\"tool\xc5" "\xbf" "\":[]}",
      "key \"tool??\" in \"tool_choice\" differs from \"tools\" only by "
      "case" },
    { CT_RESPONSES, "{\"type\":\"function\",\"tool\\u017f\":[]}",
      "key \"tool??\" in \"tool_choice\" differs from \"tools\" only by "
      "case" },
    { CT_RESPONSES, "{\"type\":\"function\",\"Allowed_Tools\":{}}",
      "key \"Allowed_Tools\" in \"tool_choice\" differs from "
      "\"allowed_tools\" only by case" },
    { CT_RESPONSES, "{\"type\":\"function\",\"allowed_tool\\u017F\":{}}",
      "key \"allowed_tool??\" in \"tool_choice\" differs from "
      "\"allowed_tools\" only by case" },
    { CT_RESPONSES, "{\"Type\":\"x\",\"TOOLS\":[]}",
      "key \"Type\" in \"tool_choice\" differs from \"type\" only by case" },
    { CT_RESPONSES, "{\"TOOLS\":[],\"Type\":\"x\"}",
      "key \"TOOLS\" in \"tool_choice\" differs from \"tools\" only by case" },
    { CT_RESPONSES, "{\"type\":\"function\",\"Typ\xc3" "\xa9" "\":\"x\"}",
      "" },
    { CT_RESPONSES, "{\"type\":\"function\",\"x\":{\"Type\":\"mcp\",\"TOOLS\""
                    ":[]}}", "" },
    { CT_RESPONSES, "{\"type\":\"function\",\"type\":\"mcp\"}",
      "duplicate key ?type?" },
    { CT_RESPONSES, "{\"type\":\"mcp\",\"typ\\u0065\":\"function\"}",
      "duplicate key ?typ?u0065?" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"mode\":\"auto\",\"tools\":"
                    "[{\"type\":\"function\",\"name\":\"f\"},{\"type\":\"cust"
                    "om\"}]}",
      "a tool in \"tool_choice\" of a type the client runs has no "
      "\"function\", \"custom\" or \"name\": it is refused, as a router "
      "may read its other key as a tool the provider runs ({\"type\": "
      "\"function\", \"googleSearch\": {}})" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"mode\":\"auto\",\"tools\":"
                    "[{\"type\":\"web_search_preview\"}]}", "" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"mode\":\"auto\",\"tools\":"
                    "[{\"type\":\"file_search\"}]}",
      "tool type \"file_search\" in \"tool_choice\" is run by the "
      "provider; the policy does not allow it (provider_tools: file_search)" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[{\"type\":\"mcp\""
                    ",\"server_label\":\"x\"}]}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[{\"type\":\"frobn"
                    "icate\"}]}",
      "tool type \"frobnicate\" in \"tool_choice\" is unknown to the "
      "gateway and may be run by the provider; it is refused" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[\"web_search\"]}",
      "\"tools\" in \"tool_choice\" must be a list of objects" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":{\"type\":\"mcp\"}"
                    "}",
      "\"tools\" in \"tool_choice\" must be a list" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[{\"type\":1}]}",
      "a tool's \"type\" in \"tool_choice\" must be a string" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[{\"name\":\"f\"}]"
                    "}",
      "a tool in \"tool_choice\" has no \"type\": it is refused on "
      "responses, where a router may read it as a tool the provider runs "
      "({\"googleSearch\": {}})" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":null}", "" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\"}", "" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[{\"Type\":\"mcp\""
                    "}]}",
      "key \"Type\" in \"tool_choice\" differs from \"type\" only by case" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[{\"Typ\xc3" "\xa9"
                    "\":\"x\",\"tYpE\":\"mcp\"}]}",
      "key \"tYpE\" in \"tool_choice\" differs from \"type\" only by case" },
    { CT_RESPONSES, "{\"type\":\"\\u0061llowed_tools\",\"tools\":[{\"type\":"
                    "\"mcp\"}]}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"Tools\":[{\"type\":\"mcp\""
                    "}]}",
      "key \"Tools\" in \"tool_choice\" differs from \"tools\" only by case" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tool\xc5" "\xbf"
                    "\":[{\"type\":\"mcp\"}]}",
      "key \"tool??\" in \"tool_choice\" differs from \"tools\" only by "
      "case" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[{\"type\":\"m\\u0"
                    "063p\"}]}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_RESPONSES, "{\"type\":\"allowed_tools\",\"tools\":[{\"type\":\"f\\u0"
                    "0e9\"}]}",
      "tool type \"f??\" in \"tool_choice\" is unknown to the gateway and "
      "may be run by the provider; it is refused" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"allowed_tools\":{\"mode\":\"req"
               "uired\",\"tools\":[{\"type\":\"function\",\"function\":{\"nam"
               "e\":\"f\"}}]}}", "" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"allowed_tools\":{\"mode\":\"aut"
               "o\",\"tools\":[{\"type\":\"image_generation\"}]}}",
      "tool type \"image_generation\" in \"tool_choice\" is run by the "
      "provider; the policy does not allow it (provider_tools: "
      "image_generation)" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"allowed_tools\":[]}",
      "\"allowed_tools\" in \"tool_choice\" must be an object" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"allowed_tools\":null}", "" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"allowed_tools\":{\"TOOLS\":[]}}",
      "key \"TOOLS\" in \"tool_choice\" differs from \"tools\" only by case" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"allowed_tools\":{\"Allowed_Tool"
               "s\":[]}}",
      "key \"Allowed_Tools\" in \"tool_choice\" differs from "
      "\"allowed_tools\" only by case" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"allowed_tools\":{\"tools\":{\"t"
               "ype\":\"mcp\"}}}",
      "\"tools\" in \"tool_choice\" must be a list" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"allowed_tools\":{\"tools\":[{\""
               "name\":\"f\"}]}}",
      "a tool in \"tool_choice\" has no \"type\": it is refused on "
      "chat/completions, where a router may read it as a tool the provider "
      "runs ({\"googleSearch\": {}})" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"tools\":[{\"type\":\"function\""
               ",\"name\":\"f\"}],\"allowed_tools\":{\"tools\":[{\"type\":\"m"
               "cp\"}]}}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_CHAT, "{\"type\":\"allowed_tools\",\"tools\":[{\"type\":\"mcp\"}],\""
               "allowed_tools\":{\"tools\":[{\"type\":\"function\",\"name\":"
               "\"f\"}]}}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_CHAT, "{\"type\":\"web_search\"}",
      "tool type \"web_search\" in \"tool_choice\" is run by the provider; "
      "the policy does not allow it (provider_tools: web_search)" },
    { CT_CHAT, "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}", "" },
    { CT_CHAT, "\"web_se\\u0061rch\"",
      "tool type \"web_search\" in \"tool_choice\" is run by the provider; "
      "the policy does not allow it (provider_tools: web_search)" },
    { CT_MESSAGES, "{\"type\":\"tool\",\"name\":\"f\"}", "" },
    { CT_MESSAGES, "{\"type\":\"any\"}", "" },
    { CT_MESSAGES, "{\"type\":\"web_fetch_20250910\"}",
      "tool type \"web_fetch_20250910\" in \"tool_choice\" is run by the "
      "provider; the policy does not allow it (provider_tools: web_fetch)" },
    { CT_MESSAGES, "{\"type\":\"allowed_tools\",\"tools\":[{\"name\":\"f\"}]}",
      "" },
    { CT_MESSAGES, "{\"type\":\"allowed_tools\",\"tools\":[{\"name\":\"f\"},{"
                   "\"type\":\"mcp\"}]}",
      "tool type \"mcp\" in \"tool_choice\" is run by the provider; the "
      "policy does not allow it (provider_tools: mcp)" },
    { CT_COMPLETIONS, "\"auto\"", "" },
    { CT_COMPLETIONS, "{\"type\":\"web_search\"}",
      "tool type \"web_search\" in \"tool_choice\" is run by the provider; "
      "the policy does not allow it (provider_tools: web_search)" },
    { CT_COMPLETIONS, "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}",
      "" },
    { CT_COMPLETIONS, "{\"Type\":\"function\"}",
      "key \"Type\" in \"tool_choice\" differs from \"type\" only by case" },
