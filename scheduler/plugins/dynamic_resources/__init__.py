"""DynamicResources: devices for pods' ResourceClaims (the structured allocator so far)."""
